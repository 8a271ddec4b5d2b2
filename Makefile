# roomhub — `make run` starts the hub, `make test` checks everything.
GO          ?= go
GOBIN       := $(shell $(GO) env GOPATH)/bin
STATICCHECK := $(GOBIN)/staticcheck
STATICCHECK_VERSION := v0.8.2
SUDO        := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: run test deps checks vet lint unit sdk chart client screenshots bench fuzz loadtest loadtest-ingest chaos soak

run:
	$(GO) run .

# deps installs what the tests need and the machine may lack: redis-server and
# redis-cli, Chromium and Node.js (Debian packages), playwright-core,
# axe-core, esbuild, Redocly and TypeScript (npm: to drive Chromium, check
# accessibility, lint the OpenAPI description, bundle and compile the
# TypeScript client; the React example's test installs React and Vite as its
# README says), staticcheck, and nginx for README's proxy snippet (Debian's
# binary unpacked under .cache/nginx, not installed: no service starts).
APT_MISSING = $(strip \
	$(if $(shell command -v redis-server),,redis-server) \
	$(if $(shell command -v redis-cli),,redis-tools) \
	$(if $(wildcard /usr/bin/chromium),,chromium) \
	$(if $(shell command -v npm),,nodejs npm))

# E2E_PACKAGES are web/e2e's npm packages (package.json): any missing, npm ci.
E2E_PACKAGES = playwright-core axe-core esbuild @redocly/cli openapi-typescript openapi-fetch typescript

deps:
	@if [ -n "$(APT_MISSING)" ]; then \
		echo "installing $(APT_MISSING)"; \
		$(SUDO) apt-get update -qq && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(APT_MISSING) >/dev/null; \
	fi
	@for p in $(E2E_PACKAGES); do test -d web/e2e/node_modules/$$p || { npm ci --prefix web/e2e --no-audit --no-fund; break; }; done
	@test -x $(STATICCHECK) || $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	@command -v nginx >/dev/null || test -x .cache/nginx/usr/sbin/nginx || { \
		mkdir -p .cache/nginx && cd .cache/nginx && \
		{ apt-get download -qq nginx 2>/dev/null || { $(SUDO) apt-get update -qq && apt-get download -qq nginx 2>/dev/null; }; } && \
		dpkg -x nginx_*.deb . && rm nginx_*.deb; }

vet:
	$(GO) vet ./...

lint:
	$(STATICCHECK) ./...
	@test -z "$$(gofmt -l .)" || { echo "gofmt would change:"; gofmt -l .; exit 1; }

# The chaos run goes after the rest, not beside it: its processes would load
# the machine under the other packages' tests.
# -vet=off: the vet target runs every analyzer. -parallel 6: the tests that
# call t.Parallel() mostly wait (see internal/testhub/hub.go).
unit:
	$(GO) test -race -count=1 -vet=off -parallel 6 -timeout 12m $$($(GO) list ./... | grep -v /internal/chaos)
	$(GO) test -count=1 -vet=off -timeout 5m ./internal/chaos/

# sdk runs the client SDK's unit tests (node's test runner, a fake EventSource).
sdk:
	node --test web/test/

# chart lints and renders the Helm chart (deploy/helm/roomhub) with Helm's own
# packages and decodes every object strictly into the Kubernetes API types.
# deploy/ is a module of its own: Helm and client-go stay out of the hub's
# build, and its tests need no -race (they run no goroutines of the hub).
chart:
	cd deploy && $(GO) vet ./... && $(STATICCHECK) ./... && $(GO) test -count=1 ./...

# client is the backends' Go client (api/client), a module of its own on the
# standard library alone: vetted and tested apart (api/backendclient_test.go
# runs it against a live hub).
client:
	cd api/client && $(GO) vet ./... && $(STATICCHECK) ./... && $(GO) test -count=1 ./...

# checks (vet, lint, the SDK's and the client's tests), unit and chart run
# side by side: the analyzers and the chart's build (Helm, the Kubernetes
# types) take the cores while most of unit's tests wait on sockets, Redis
# and Chromium. Any of them failing fails the target.
test: deps
	$(MAKE) -j3 --output-sync=target checks unit chart

checks: vet lint sdk client

# screenshots regenerates the inbox element's images in docs/img (web/README.md)
# from the browser test that takes them.
screenshots: deps
	ROOMHUB_ARTIFACTS=$(CURDIR)/docs/img $(GO) test -count=1 -run '^TestBrowser_InboxElementFollowsTheInboxExactly$$' ./web/

# bench runs the fan-out benchmarks (results are written down in docs/).
bench: deps
	$(GO) test -run '^$$' -bench . -benchmem ./hub/...

# loadtest runs the standard load shapes (k6/loadgen) against a fresh hub and
# redis-server each; see docs/performance.md.
loadtest: deps
	k6/loadgen/run.sh

# loadtest-ingest runs shape D (1,000 streams, 1,000 rooms, 1,000 events/s)
# with the events added to the ingest streams by XADD, 10 per pipeline.
loadtest-ingest: deps
	INGEST=1 BATCH=10 SHAPES=1000:1000:1000 k6/loadgen/run.sh

# fuzz runs each network-facing parser's fuzzer for a short while.
fuzz:
	$(GO) test -run '^$$' -fuzz FuzzParseStreamID -fuzztime 30s ./hub/
	$(GO) test -run '^$$' -fuzz FuzzDecode -fuzztime 30s ./hub/publish/
	$(GO) test -run '^$$' -fuzz FuzzParseNotificationID -fuzztime 30s ./hub/inbox/
	$(GO) test -run '^$$' -fuzz FuzzParseWireMessage -fuzztime 30s ./hub/
	$(GO) test -run '^$$' -fuzz FuzzVerifyToken -fuzztime 30s ./api/
	$(GO) test -run '^$$' -fuzz FuzzParseRoomsClaim -fuzztime 30s ./api/
	$(GO) test -run '^$$' -fuzz FuzzDecodeSettings -fuzztime 30s ./api/
	$(GO) test -run '^$$' -fuzz FuzzParsePageID -fuzztime 30s ./hub/
	$(GO) test -run '^$$' -fuzz FuzzFilter -fuzztime 30s ./hub/inbox/
	$(GO) test -run '^$$' -fuzz FuzzParseDeadCursor -fuzztime 30s ./hub/delivery/
	$(GO) test -run '^$$' -fuzz FuzzParseDeadCursor -fuzztime 30s ./hub/ingest/
	$(GO) test -run '^$$' -fuzz FuzzSessions_Verify -fuzztime 30s ./hub/console/
	$(GO) test -run '^$$' -fuzz FuzzSubscriptionCheck -fuzztime 30s ./hub/push/webpush/
	$(GO) test -run '^$$' -fuzz FuzzSafeURL -fuzztime 30s ./hub/push/
	$(GO) test -run '^$$' -fuzz FuzzRegistrationCheck -fuzztime 30s ./hub/push/
	$(GO) test -run '^$$' -fuzz FuzzParseTraceParent -fuzztime 30s ./hub/

# chaos runs two hub binaries, a Redis master with a replica and three
# sentinels, resuming clients and a publisher through faults on a schedule
# (listener kills, cut connections, CLIENT PAUSE, failover, a hub restart) and
# fails on any silent loss, duplicate or reorder; `make test` runs it for 40 s.
# The report lands in $(CHAOS_OUT). soak: 10 minutes, resources sampled, after
# 20,000 random inbox actions whose counts must equal the lists.
CHAOS_OUT ?= /tmp/roomhub-chaos
chaos: deps
	mkdir -p $(CHAOS_OUT)
	$(GO) test -count=1 -timeout 10m -run TestChaos ./internal/chaos/ -args \
		-chaos.duration=60s -chaos.report=$(CHAOS_OUT)/chaos.json

soak: deps
	ROOMHUB_LIFECYCLE_OPS=20000 $(GO) test -count=1 -timeout 15m -run TestLifecycle_CountsEqualLists ./hub/inbox/
	mkdir -p $(CHAOS_OUT)
	$(GO) test -count=1 -timeout 25m -run TestChaos ./internal/chaos/ -args \
		-chaos.duration=10m -chaos.sample=10s -chaos.report=$(CHAOS_OUT)/soak.json
