# Sourced by run.sh and topic.sh: a work folder removed at exit with the hub
# and redis-server they started, the hub and the load generator built
# (HUB_BIN: a hub built elsewhere), free_port, and the open-files limit.
work=$(mktemp -d)
cleanup() {
  [ -n "${hub_pid:-}" ] && kill "$hub_pid" 2>/dev/null || true
  [ -f "$work/redis.pid" ] && kill "$(cat "$work/redis.pid")" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
hub_bin=${HUB_BIN:-$work/roomhub}
[ -n "${HUB_BIN:-}" ] || go build -o "$work/roomhub" .
go build -o "$work/loadgen" ./k6/loadgen
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
ulimit -n 20000 2>/dev/null || ulimit -n "$(ulimit -Hn)"
