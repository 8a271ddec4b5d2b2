#!/usr/bin/env bash
# Starts Centrifugo (v6) the way run.sh starts a hub, to measure it side by side
# on the same shapes: on 127.0.0.1:$SERVER_PORT, its Redis engine on
# $REDIS_URL, unidirectional SSE, the load generator's JWT secret and API key.
#   go install github.com/centrifugal/centrifugo/v6@v6.9.1
#   HUB_BIN=k6/loadgen/centrifugo.sh PEER=centrifugo SHAPES="5000:100:200" bash k6/loadgen/run.sh
# CENTRIFUGO is the binary (default: centrifugo on PATH, else in $(go env GOPATH)/bin).
set -euo pipefail
bin=${CENTRIFUGO:-$(command -v centrifugo || echo "$(go env GOPATH)/bin/centrifugo")}
export CENTRIFUGO_HTTP_SERVER_ADDRESS=127.0.0.1 CENTRIFUGO_HTTP_SERVER_PORT="${SERVER_PORT:?}" \
  CENTRIFUGO_LOG_LEVEL=error CENTRIFUGO_HEALTH_ENABLED=true \
  CENTRIFUGO_ENGINE_TYPE=redis CENTRIFUGO_ENGINE_REDIS_ADDRESS="${REDIS_URL:?}" \
  CENTRIFUGO_CLIENT_TOKEN_HMAC_SECRET_KEY=local_dev_secret CENTRIFUGO_CLIENT_ALLOWED_ORIGINS='*' \
  CENTRIFUGO_UNI_SSE_ENABLED=true CENTRIFUGO_HTTP_API_KEY=local_dev_internal_key
exec "$bin"
