#!/usr/bin/env bash
# Compares PUBSUB_MODE=patterns with PUBSUB_MODE=channels: HUBS hubs (default
# three) on one redis-server, many quiet rooms (by default 3,000 streams over
# 3,000 rooms, each room's one stream on one hub), a fixed publish rate.
# Writes one JSON report per mode and run into OUT (default
# /tmp/roomhub-pubsub). MODES picks the modes, in order.
#   RUNS=3 bash k6/loadgen/pubsub.sh
#   HUBS=1 MODES=channels bash k6/loadgen/pubsub.sh   # the same work on one hub
#   HUB_VARS="GOMAXPROCS=1" ...                       # extra environment for the hubs
#   HUB_BIN=/tmp/floor HUBS=3 ...                     # another server (k6/loadgen/floor: three floors
#                                                     # against one; with the default shape each room's
#                                                     # publishes go to the server holding its stream)
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/roomhub-pubsub}
RUNS=${RUNS:-1}
DURATION=${DURATION:-30s}
STREAMS=${STREAMS:-3000}
ROOMS=${ROOMS:-3000}
RATE=${RATE:-200}
HUBS=${HUBS:-3}
MODES=${MODES:-patterns channels}
mkdir -p "$OUT"
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  [ -f "$work/redis.pid" ] && kill "$(cat "$work/redis.pid")" 2>/dev/null || true
  rm -rf "$work" 2>/dev/null || true
}
trap cleanup EXIT
hub_bin=${HUB_BIN:-$work/roomhub}
[ -n "${HUB_BIN:-}" ] || go build -o "$work/roomhub" .
go build -o "$work/loadgen" ./k6/loadgen
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
for run in $(seq 1 "$RUNS"); do
  for mode in $MODES; do
    rport=$(free_port)
    redis-server --port "$rport" --bind 127.0.0.1 --save '' --appendonly no --daemonize yes \
      --dir "$work" --pidfile "$work/redis.pid" --logfile "$work/redis.log"
    for _ in $(seq 50); do [ -s "$work/redis.pid" ] && break; sleep 0.1; done
    urls=(); pids=()
    for _ in $(seq 1 "$HUBS"); do
      hport=$(free_port)
      # shellcheck disable=SC2086 # HUB_VARS is a list of VAR=value words
      env ${HUB_VARS:-} REDIS_URL="redis://127.0.0.1:$rport" SERVER_PORT="$hport" LOG_LEVEL=warn PUBSUB_MODE="$mode" \
        "$hub_bin" >>"$work/hub.log" 2>&1 &
      pids+=($!); urls+=("http://127.0.0.1:$hport")
      for _ in $(seq 100); do curl -fs "http://127.0.0.1:$hport/health" >/dev/null && break; sleep 0.1; done
    done
    out="$OUT/$mode-hubs$HUBS-run$run.json"
    "$work/loadgen" -hub "$(IFS=,; echo "${urls[*]}")" -hub-pid "$(IFS=,; echo "${pids[*]}")" \
      -streams "$STREAMS" -rooms "$ROOMS" -rate "$RATE" -duration "$DURATION" \
      -redis-pid "$(cat "$work/redis.pid")" >"$out"
    python3 - "$out" "$mode" "$HUBS" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
d, h, x = r["delivery"], r["hub"], r["redis"]
print(f'{sys.argv[2]:>8}: lost {d["lost"]}, dup {d["duplicated"]}, p50/p99 {d["p50ms"]:.1f}/{d["p99ms"]:.1f} ms, '
      f'{sys.argv[3]} hubs {h["cpuSecs"]:.2f} CPU-s, redis {x["cpuSecs"]:.2f} CPU-s, hubs RSS {h["rssKB"]/1024:.0f} MB')
PY
    for p in "${pids[@]}"; do kill "$p"; wait "$p" 2>/dev/null || true; done
    pids=()
    kill "$(cat "$work/redis.pid")"; rm -f "$work/redis.pid"
  done
done
echo "reports in $OUT"
