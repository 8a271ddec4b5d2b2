#!/usr/bin/env bash
# Measures one topic publish to many followers (docs/performance.md, Topics)
# against a fresh hub and redis-server on loopback, and prints the report.
#   bash k6/loadgen/topic.sh                       # 1,000,000 followers, 1,000 streams
#   FOLLOWERS=100000 STREAMS=200 bash k6/loadgen/topic.sh
#   WARM=1 ...                                    # the followers have an inbox: one publish before
#   HUB_BIN=/tmp/roomhub-before ...               # a hub built elsewhere
set -euo pipefail
cd "$(dirname "$0")/../.."
FOLLOWERS=${FOLLOWERS:-1000000}
STREAMS=${STREAMS:-1000}
# shellcheck source=k6/loadgen/setup.sh
. k6/loadgen/setup.sh
rport=$(free_port) hport=$(free_port)
redis-server --port "$rport" --bind 127.0.0.1 --save '' --appendonly no --daemonize yes \
  --dir "$work" --pidfile "$work/redis.pid" --logfile "$work/redis.log"
for _ in $(seq 50); do [ -s "$work/redis.pid" ] && break; sleep 0.1; done
REDIS_URL="redis://127.0.0.1:$rport" SERVER_PORT="$hport" LOG_LEVEL=warn "$hub_bin" >"$work/hub.log" 2>&1 &
hub_pid=$!
for _ in $(seq 100); do curl -fs "http://127.0.0.1:$hport/health" >/dev/null && break; sleep 0.1; done
curl -fs "http://127.0.0.1:$hport/health" >/dev/null || { echo "the hub did not start:" >&2; cat "$work/hub.log" >&2; exit 1; }
warm=()
[ -n "${WARM:-}" ] && warm=(-topic-warm)
"$work/loadgen" -hub "http://127.0.0.1:$hport" -topic-followers "$FOLLOWERS" -streams "$STREAMS" -drain 10s "${warm[@]}" \
  -topic-redis "127.0.0.1:$rport" -hub-pid "$hub_pid" -redis-pid "$(cat "$work/redis.pid")"
