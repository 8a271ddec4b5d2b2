#!/usr/bin/env bash
# The most events per second one hub publishes, by each way in (nobody
# listening, 1,000 rooms): POST /notifications/publish with 64 requests at
# once, its batch route (100 events a request, 16 at once), and the ingest
# streams (a backlog of EVENTS, timed from the hub's start until drained).
# A fresh redis-server and hub each run; RUNS alternating rounds.
#   RUNS=3 k6/loadgen/ceiling.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
RUNS=${RUNS:-2}
EVENTS=${EVENTS:-200000}
work=$(mktemp -d)
cleanup() {
  [ -n "${hub_pid:-}" ] && kill "$hub_pid" 2>/dev/null || true
  [ -f "$work/redis.pid" ] && kill "$(cat "$work/redis.pid")" 2>/dev/null || true
  pkill -f "$work/roomhub" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
go build -o "$work/roomhub" .
go build -o "$work/ceiling" ./k6/loadgen/ceiling
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
for run in $(seq 1 "$RUNS"); do
  for mode in http batch ingest; do
    rport=$(free_port); hport=$(free_port)
    redis-server --port "$rport" --bind 127.0.0.1 --save '' --appendonly no --daemonize yes \
      --dir "$work" --pidfile "$work/redis.pid" --logfile "$work/redis.log"
    for _ in $(seq 50); do [ -s "$work/redis.pid" ] && break; sleep 0.1; done
    hub="REDIS_URL=redis://127.0.0.1:$rport SERVER_PORT=$hport LOG_LEVEL=warn $work/roomhub"
    if [ "$mode" = ingest ]; then
      "$work/ceiling" -mode ingest -redis "127.0.0.1:$rport" -events "$EVENTS" -hub-cmd "exec env $hub >$work/hub.log 2>&1"
    else
      sh -c "exec env $hub" >"$work/hub.log" 2>&1 &
      hub_pid=$!
      for _ in $(seq 100); do curl -fs "http://127.0.0.1:$hport/health" >/dev/null && break; sleep 0.1; done
      conc=64; [ "$mode" = batch ] && conc=16
      "$work/ceiling" -mode "$mode" -hub "http://127.0.0.1:$hport" -concurrency "$conc"
      kill "$hub_pid"; wait "$hub_pid" 2>/dev/null || true; hub_pid=
    fi
    kill "$(cat "$work/redis.pid")"; rm -f "$work/redis.pid"
    sleep 0.5
  done
done
