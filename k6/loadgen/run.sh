#!/usr/bin/env bash
# Runs the standard load shapes against a fresh hub and redis-server each, on
# loopback, and writes one JSON report per run into OUT (default /tmp/roomhub-load).
#   make loadtest                      # every shape, once
#   RUNS=3 SHAPES="5000:100:200" make loadtest
#   HUB_BIN=/tmp/roomhub-before ...   # measure a hub built elsewhere (before/after)
#   PROFILE=1 ...                      # also a 10 s CPU profile, 15 s into each run
#   SHAPES="5000:100:200:3" ...        # a fourth field: page streams of that many rooms
#   BATCH=100 ...                      # events go in POST /notifications/publish/batch of 100
#   INGEST=1 ...                       # events are added with XADD to the ingest streams (BATCH per pipeline)
#   HUB_VARS="GOGC=200" ...            # extra environment for the hub only (HUB_ENV is its own setting)
#   HUB_BIN=k6/loadgen/centrifugo.sh PEER=centrifugo ...  # Centrifugo side by side (see that file)
#   PIN=1 ...                          # the hub on the last core alone; redis-server and the
#                                      # load generator on the others (as clients on other hosts)
# A shape is streams:rooms:publishes-per-second. Streams above 9,000 are held
# by two loadgen processes (a process may hold at most 20,000 open files).
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/roomhub-load}
RUNS=${RUNS:-1}
DURATION=${DURATION:-30s}
SHAPES=${SHAPES:-"1000:10:100 5000:100:200 10000:100:200 19000:100:200"}
mkdir -p "$OUT"
# shellcheck source=k6/loadgen/setup.sh
. k6/loadgen/setup.sh
# With PIN, hub_cpu runs the hub and others runs everything else (taskset).
hub_cpu=() others=()
if [ -n "${PIN:-}" ]; then
  last=$(($(nproc) - 1))
  [ "$last" -gt 0 ] || { echo "PIN needs at least 2 cores" >&2; exit 1; }
  hub_cpu=(taskset -c "$last") others=(taskset -c "0-$((last - 1))")
fi
for shape in $SHAPES; do
  IFS=: read -r streams rooms rate page <<<"$shape"
  page=${page:-0}
  procs=1
  [ "$streams" -gt 9000 ] && procs=2
  for run in $(seq 1 "$RUNS"); do
    rport=$(free_port); hport=$(free_port)
    "${others[@]}" redis-server --port "$rport" --bind 127.0.0.1 --save '' --appendonly no --daemonize yes \
      --dir "$work" --pidfile "$work/redis.pid" --logfile "$work/redis.log"
    for _ in $(seq 50); do [ -s "$work/redis.pid" ] && break; sleep 0.1; done
    dport=$(free_port)
    # shellcheck disable=SC2086 # HUB_VARS is a list of VAR=value words
    env ${HUB_VARS:-} REDIS_URL="redis://127.0.0.1:$rport" SERVER_PORT="$hport" LOG_LEVEL=warn DEBUG_ADDR="127.0.0.1:$dport" \
      "${hub_cpu[@]}" "$hub_bin" >"$work/hub.log" 2>&1 &
    hub_pid=$!
    for _ in $(seq 100); do curl -fs "http://127.0.0.1:$hport/health" >/dev/null && break; sleep 0.1; done
    curl -fs "http://127.0.0.1:$hport/health" >/dev/null || { echo "the hub did not start:" >&2; cat "$work/hub.log" >&2; exit 1; }
    suffix=""
    [ "$page" -gt 0 ] && suffix="-page$page"
    [ "${BATCH:-1}" -gt 1 ] && suffix="$suffix-batch$BATCH"
    peer=()
    [ -n "${PEER:-}" ] && peer=(-peer "$PEER")
    ingest=()
    [ -n "${INGEST:-}" ] && ingest=(-ingest "127.0.0.1:$rport") && suffix="$suffix-ingest"
    out="$OUT/${streams}-${rooms}-${rate}${suffix}-run${run}.json"
    if [ -n "${PROFILE:-}" ]; then
      (sleep 15; curl -fs -o "${out%.json}.cpu.pprof" "http://127.0.0.1:$dport/debug/pprof/profile?seconds=10") &
    fi
    "${others[@]}" "$work/loadgen" -hub "http://127.0.0.1:$hport" -streams "$streams" -rooms "$rooms" -rate "$rate" \
      -duration "$DURATION" -procs "$procs" -page-rooms "$page" -batch "${BATCH:-1}" "${ingest[@]}" "${peer[@]}" -hub-pid "$hub_pid" -redis-pid "$(cat "$work/redis.pid")" >"$out"
    python3 - "$out" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
s, d, h, x = r["shape"], r["delivery"], r["hub"], r["redis"]
print(f'{s["streams"]:>6}/{s["rooms"]}/{s["publishesPerSec"]:.0f}{"/page" + str(s["pageRooms"]) if s.get("pageRooms") else ""}: connected {r["connect"]["ok"]}, '
      f'lost {d["lost"]}, dup {d["duplicated"]}, p50/p99 {d["p50ms"]:.1f}/{d["p99ms"]:.1f} ms (publish p50/p99 {r["publish"]["p50ms"]:.1f}/{r["publish"]["p99ms"]:.1f}), '
      f'hub {h["cpuSecsPer1000Deliveries"]:.4f} CPU-s/1k, {h["rssKBPerStream"]:.0f} KB/stream '
      f'({h.get("kbPerStreamAboveBaseAtConnect", 0):.1f} / {h.get("kbPerStreamAboveBaseAtEnd", 0):.1f} above the base after connect / at the end), '
      f'redis {x["cpuSecsPer1000Deliveries"]:.4f} CPU-s/1k; per stream-second: hub {h["cpuMicrosPerStreamSec"]:.2f} µs, redis {x["cpuMicrosPerStreamSec"]:.2f} µs')
PY
    kill "$hub_pid"; wait "$hub_pid" 2>/dev/null || true; hub_pid=
    kill "$(cat "$work/redis.pid")"; rm -f "$work/redis.pid"
  done
done
echo "reports in $OUT"
