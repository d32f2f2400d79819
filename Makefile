# Gatehouse. `make run` starts a demo app with Gatehouse in front of it;
# `make test` runs every test, the integration suites included.
GO       ?= go
BIN      ?= bin
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -s -w -X main.version=$(VERSION)
# `make run`'s addresses, see there.
UPSTREAM      ?=
PORT          ?= 8080
UPSTREAM_PORT ?= 3000
ADMIN_PORT    ?= 9090
# `make image`: the container image as an OCI layout, see docs/hosting.md.
IMAGE     ?= ghcr.io/gatehouse-auth/gatehouse
PLATFORMS ?= linux/amd64 linux/arm64
REVISION  ?= $(shell git rev-parse HEAD 2>/dev/null)
CREATED   ?= $(shell git log -1 --format=%cI 2>/dev/null)
CA_BUNDLE ?= /etc/ssl/certs/ca-certificates.crt

.PHONY: build run test test-unit test-integration test-deploy bench lint clean image

build:
	@if [ -x $(BIN)/gatehouse ]; then echo "building gatehouse…"; \
	else echo "building gatehouse (the first build downloads modules: a few minutes)…"; fi
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/gatehouse ./cmd/gatehouse
	$(GO) build -o $(BIN)/demo-upstream ./examples/demo-upstream

# make run [PORT=8080] [UPSTREAM_PORT=3000] [ADMIN_PORT=9090] [UPSTREAM=http://…]
# Gatehouse on its embedded defaults: bbolt file gatehouse.db, mail written to
# ./mail, listening on 127.0.0.1:PORT, /healthz, /readyz and /metrics on
# 127.0.0.1:ADMIN_PORT, and the demo upstream on 127.0.0.1:UPSTREAM_PORT
# unless UPSTREAM is given. Set the ports when another program holds them.
run: build
	@BIN=$(BIN) UPSTREAM=$(UPSTREAM) PORT=$(PORT) UPSTREAM_PORT=$(UPSTREAM_PORT) ADMIN_PORT=$(ADMIN_PORT) ./.ci/make-run

# `go test ./...` runs the unit tests, which need no test-only module. The
# integration suites sit behind the build tag "integration" so that they do
# not weigh on `go build` and `go test ./...`: the browser test (chromedp)
# and the ACME tests (Pebble) in cmd/gatehouse, and the manifest, Dockerfile,
# systemd and walkthrough checks in deploy/ (k8s.io). `make test` runs all
# three in parallel, with the race detector except in deploy/, whose tests
# only decode files and run the gatehouse binary in a child process.
# Each suite's output comes whole when it ends (--output-sync), minutes
# later on a busy machine; a line of its own target says at once that it
# started.
INTEGRATION_TESTS := ^(TestBrowser|TestTLSACME)

test:
	@$(MAKE) --no-print-directory -j3 --output-sync=target test-unit test-integration test-deploy

test-unit: started-test-unit
	$(GO) test -race -count=1 -timeout 9m ./...

test-integration: started-test-integration
	$(GO) test -race -count=1 -timeout 9m -tags integration -run '$(INTEGRATION_TESTS)' ./cmd/gatehouse/

test-deploy: started-test-deploy
	$(GO) test -count=1 -timeout 9m -tags integration ./deploy/

SUITE_test-unit        := unit tests (race), every package
SUITE_test-integration := integration: browser + ACME (race), cmd/gatehouse
SUITE_test-deploy      := deploy checks: manifests, Dockerfile, systemd, walkthroughs
.PHONY: started-test-unit started-test-integration started-test-deploy
started-test-unit started-test-integration started-test-deploy:
	@echo "$(SUITE_$(@:started-%=%)) … (output when it ends)"

# Micro-benchmarks (-benchmem) and the side-by-side load report
# (upstream direct, bare httputil.ReverseProxy, Gatehouse), with the CPU
# time per request of each proxy in its own process (TestLoadCPU).
bench:
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 2s ./storage/bolt/ ./storage/cache/ ./proxy/ ./authflows/
	$(GO) test -tags loadbench -run 'TestLoadReport|TestPostgresLoadReport|TestLoadCPU' -count=1 -timeout 30m -v ./cmd/gatehouse/

lint:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags integration ./...
	$(GO) tool staticcheck ./...
	$(GO) tool staticcheck -tags integration ./...

# The container image without a container engine (ko-style): static
# binaries for PLATFORMS, then cmd/ociimage writes dist/gatehouse-oci (an
# OCI image layout tagged VERSION, with OCI labels) and dist/gatehouse-oci.tar.
# Push with `crane push --index dist/gatehouse-oci $(IMAGE):$(VERSION)` or
# `skopeo copy --all oci:dist/gatehouse-oci:$(VERSION) docker://$(IMAGE):$(VERSION)`.
image:
	@echo "building the image $(IMAGE):$(VERSION) for $(PLATFORMS)…"
	@rm -rf dist/image
	@for p in $(PLATFORMS); do \
	  os=$${p%/*}; arch=$${p#*/}; echo "  go build $$p"; \
	  CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o dist/image/$${os}_$${arch}/gatehouse ./cmd/gatehouse || exit 1; \
	done
	$(GO) run ./cmd/ociimage --out dist/gatehouse-oci --version '$(VERSION)' --revision '$(REVISION)' \
	  $(if $(CREATED),--created '$(CREATED)') --ca-bundle '$(CA_BUNDLE)' \
	  $(foreach p,$(PLATFORMS),--binary $(p)=dist/image/$(subst /,_,$(p))/gatehouse)

clean:
	rm -rf $(BIN) dist

# Fuzz each parser of the request path for FUZZTIME (seeds and past finds
# live in testdata/fuzz and run with every `go test`). FUZZTIME is a count of
# executions (Nx), not a duration: with a duration, Go's fuzzing coordinator
# can fail a target with a bare "context deadline exceeded" when the deadline
# races its own shutdown on a busy machine, having found nothing. A count has
# no deadline. About 10,000 executions a second per target on 2 cores, so the
# default is about 30 s each. CI: make fuzz FUZZTIME=100000x
FUZZTIME ?= 300000x
.PHONY: fuzz
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzCleanPath$$' -fuzztime $(FUZZTIME) ./proxy/
	$(GO) test -run '^$$' -fuzz '^FuzzSessionCookie$$' -fuzztime $(FUZZTIME) ./proxy/session/
	$(GO) test -run '^$$' -fuzz '^FuzzHeaderScrubber$$' -fuzztime $(FUZZTIME) ./proxy/
	$(GO) test -run '^$$' -fuzz '^FuzzLocalRedirect$$' -fuzztime $(FUZZTIME) ./authflows/
