#!/usr/bin/env bash
# Checks docs/capacity.md's model against this machine: a fresh 3-master Redis
# Cluster (no replicas) and N = 1..3 hubs on it, the same load for each N,
# pushed past what the machine can deliver; prints delivered events/s and
# the CPU of the hubs and of the masters. One JSON report per N and run in
# OUT (default /tmp/roomhub-capacity).
#   RUNS=2 bash k6/loadgen/capacity.sh
#   STREAMS=3000 ROOMS=300 RATE=4000 NS="1 3" bash k6/loadgen/capacity.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/roomhub-capacity}
RUNS=${RUNS:-1}
DURATION=${DURATION:-20s}
STREAMS=${STREAMS:-3000}
ROOMS=${ROOMS:-300}
RATE=${RATE:-4000}
BATCH=${BATCH:-1}
NS=${NS:-1 2 3}
mkdir -p "$OUT"
work=$(mktemp -d)
hub_pids=() redis_pids=()
stop_all() {
  for p in "${hub_pids[@]}" "${redis_pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${hub_pids[@]}" "${redis_pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
  done
  hub_pids=() redis_pids=()
}
cleanup() { stop_all; rm -rf "$work" 2>/dev/null || true; }
trap cleanup EXIT
go build -o "$work/roomhub" .
go build -o "$work/loadgen" ./k6/loadgen
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
# A node's cluster bus listens on its port + 10000: both must be free.
node_port() {
  python3 - <<'PY'
import random, socket
while True:
    p = random.randrange(20000, 50000)
    try:
        for q in (p, p + 10000):
            s = socket.socket(); s.bind(("127.0.0.1", q)); s.close()
        print(p); break
    except OSError:
        pass
PY
}
ulimit -n 20000 2>/dev/null || ulimit -n "$(ulimit -Hn)"

# start_cluster starts three masters and joins them; addrs and redis_pids follow.
start_cluster() {
  addrs=()
  for i in 1 2 3; do
    port=$(node_port)
    dir="$work/node$i-$port"
    mkdir -p "$dir"
    redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --cluster-enabled yes \
      --cluster-config-file "$dir/nodes.conf" --dir "$dir" --logfile "$dir/log" --daemonize yes --pidfile "$dir/pid"
    for _ in $(seq 50); do [ -s "$dir/pid" ] && break; sleep 0.1; done
    redis_pids+=("$(cat "$dir/pid")")
    addrs+=("127.0.0.1:$port")
  done
  redis-cli --cluster create "${addrs[@]}" --cluster-replicas 0 --cluster-yes >/dev/null
  for addr in "${addrs[@]}"; do
    for _ in $(seq 100); do
      redis-cli -h "${addr%:*}" -p "${addr#*:}" cluster info | grep -q 'cluster_state:ok' && break
      sleep 0.1
    done
  done
}

for run in $(seq 1 "$RUNS"); do
  for n in $NS; do
    start_cluster
    urls=()
    for _ in $(seq 1 "$n"); do
      hport=$(free_port)
      REDIS_URL="redis+cluster://$(IFS=,; echo "${addrs[*]}")" SERVER_PORT="$hport" LOG_LEVEL=warn \
        "$work/roomhub" >>"$work/hub.log" 2>&1 &
      hub_pids+=($!); urls+=("http://127.0.0.1:$hport")
      for _ in $(seq 100); do curl -fs "http://127.0.0.1:$hport/health" >/dev/null && break; sleep 0.1; done
    done
    out="$OUT/hubs$n-run$run.json"
    "$work/loadgen" -hub "$(IFS=,; echo "${urls[*]}")" -hub-pid "$(IFS=,; echo "${hub_pids[*]}")" \
      -streams "$STREAMS" -rooms "$ROOMS" -rate "$RATE" -batch "$BATCH" -duration "$DURATION" \
      -redis-pid "$(IFS=,; echo "${redis_pids[*]}")" >"$out"
    python3 - "$out" "$n" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
p, d, h, x = r["publish"], r["delivery"], r["hub"], r["redis"]
print(f'{sys.argv[2]} hubs: published {p["sent"]} (failed {p["failed"]}), delivered {d["deliveredPerSec"]:.0f}/s, '
      f'lost {d["lost"]}, dup {d["duplicated"]}, p50/p99 {d["p50ms"]:.1f}/{d["p99ms"]:.1f} ms, '
      f'hubs {h["cpuSecs"]:.1f} CPU-s ({h["cpuSecsPer1000Deliveries"]:.4f}/1k), '
      f'masters {x["cpuSecs"]:.1f} CPU-s ({x["cpuSecsPer1000Deliveries"]:.4f}/1k)')
PY
    stop_all
  done
done
echo "reports in $OUT"
