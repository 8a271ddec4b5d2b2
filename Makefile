# roomhub — `make run` starts the hub, `make test` checks everything.
GO          ?= go
GOBIN       := $(shell $(GO) env GOPATH)/bin
STATICCHECK := $(GOBIN)/staticcheck
STATICCHECK_VERSION := v0.8.2
SUDO        := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: run test deps vet lint unit bench fuzz

run:
	$(GO) run .

# deps installs what the tests need and the machine may lack: redis-server and
# redis-cli (Debian packages) and staticcheck.
deps:
	@if ! command -v redis-server >/dev/null 2>&1 || ! command -v redis-cli >/dev/null 2>&1; then \
		echo "installing redis-server and redis-tools"; \
		$(SUDO) apt-get update -qq && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server redis-tools >/dev/null; \
	fi
	@test -x $(STATICCHECK) || $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

vet:
	$(GO) vet ./...

lint:
	$(STATICCHECK) ./...
	@test -z "$$(gofmt -l .)" || { echo "gofmt would change:"; gofmt -l .; exit 1; }

unit:
	$(GO) test -race -count=1 -timeout 12m ./...

test: deps vet lint unit

# bench runs the fan-out benchmarks (results are written down in docs/).
bench: deps
	$(GO) test -run '^$$' -bench . -benchmem ./hub/

# fuzz runs each network-facing parser's fuzzer for a short while.
fuzz:
	$(GO) test -run '^$$' -fuzz FuzzParseStreamID -fuzztime 30s ./hub/
	$(GO) test -run '^$$' -fuzz FuzzDecodePublish -fuzztime 30s ./api/
