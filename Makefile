# Gatehouse. `make run` starts a demo app with Gatehouse in front of it;
# `make test` runs every test with the race detector.
GO       ?= go
BIN      ?= bin
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -s -w -X main.version=$(VERSION)
UPSTREAM ?=

.PHONY: build run test bench lint clean

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/gatehouse ./cmd/gatehouse
	$(GO) build -o $(BIN)/demo-upstream ./examples/demo-upstream

# Gatehouse on its embedded defaults: bbolt file gatehouse.db, mail written to
# ./mail, and the demo upstream on 127.0.0.1:3000 unless UPSTREAM is given.
run: build
	@BIN=$(BIN) UPSTREAM=$(UPSTREAM) ./.ci/make-run

test:
	$(GO) test -race -count=1 -timeout 9m ./...

# Micro-benchmarks (-benchmem) and the side-by-side load report
# (upstream direct, bare httputil.ReverseProxy, Gatehouse).
bench:
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 2s ./storage/bolt/ ./storage/cache/ ./proxy/ ./authflows/
	$(GO) test -tags loadbench -run 'TestLoadReport|TestPostgresLoadReport' -count=1 -timeout 30m -v ./cmd/gatehouse/

lint:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

clean:
	rm -rf $(BIN)
