# kcltool: `make demo` runs the main job against local servers, `make test`
# runs everything CI runs. Needs Go, node and npm; nothing else.

VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT  ?= $(shell git rev-parse HEAD 2>/dev/null)
LDFLAGS := -X github.com/kcltool/kcltool/internal/buildinfo.version=$(VERSION) -X github.com/kcltool/kcltool/internal/buildinfo.commit=$(COMMIT)
BIN     := bin/kcltool
# A count, not a duration: with a duration, Go 1.26's fuzz coordinator can
# report "context deadline exceeded" at the end without any failing input
# (golang/go#75804, fixed in Go 1.27). A few seconds per target here.
FUZZTIME ?= 30000x
SHELLS  := bash zsh fish powershell

.PHONY: all build test demo demo-kcl3 bench up down lint fmt-check vet completions completions-check docs docs-check fuzz install-servers help install uninstall release-check image

all: build

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | expand -t 20

build: ## build bin/kcltool with the version and commit stamped in
	go build -ldflags '$(LDFLAGS)' -o $(BIN) .

# make install PREFIX=/usr/local (DESTDIR=... for a package's staging root):
# the binary, the man pages and the bash, zsh and fish completions where each
# shell looks for them without configuration.
PREFIX ?= /usr/local
BINDIR := $(DESTDIR)$(PREFIX)/bin
MANDIR := $(DESTDIR)$(PREFIX)/share/man/man1
SHAREDIR := $(DESTDIR)$(PREFIX)/share

install: build ## install the binary, man pages and completions under PREFIX (default /usr/local; DESTDIR honoured)
	install -d $(BINDIR) $(MANDIR) $(SHAREDIR)/bash-completion/completions $(SHAREDIR)/zsh/site-functions $(SHAREDIR)/fish/vendor_completions.d
	install -m 0755 $(BIN) $(BINDIR)/kcltool
	install -m 0644 docs/man/*.1 $(MANDIR)
	install -m 0644 completions/kcltool.bash $(SHAREDIR)/bash-completion/completions/kcltool
	install -m 0644 completions/kcltool.zsh $(SHAREDIR)/zsh/site-functions/_kcltool
	install -m 0644 completions/kcltool.fish $(SHAREDIR)/fish/vendor_completions.d/kcltool.fish

uninstall: ## remove what make install put under PREFIX
	rm -f $(BINDIR)/kcltool $(addprefix $(MANDIR)/,$(notdir $(wildcard docs/man/*.1))) \
	  $(SHAREDIR)/bash-completion/completions/kcltool $(SHAREDIR)/zsh/site-functions/_kcltool $(SHAREDIR)/fish/vendor_completions.d/kcltool.fish

# goreleaser lives in its own module (tools/goreleaser/go.mod, a tool
# directive) so that its dependencies never enter kcltool's go.mod. Not part
# of make test: the first run builds goreleaser (9.5 minutes on two shared cores).
GORELEASER := go tool -modfile=tools/goreleaser/go.mod goreleaser

release-check: ## check .goreleaser.yaml and build every release archive and the checksums into dist/ (a snapshot, nothing published)
	$(GORELEASER) check
	KCLTOOL_COMMIT=$(COMMIT) $(GORELEASER) release --snapshot --clean

# IMAGE names the image; its tag is VERSION. Needs a Docker engine with
# BuildKit: never part of make test (deploy/dockerfile_test.go checks the
# Dockerfile and its binary without one).
IMAGE ?= kcltool
image: ## build the container image IMAGE:VERSION with docker (optional; see docs/deploy.md)
	@command -v docker >/dev/null 2>&1 || { echo "make image: docker is not installed; the image needs a Docker engine (go test ./deploy checks the Dockerfile without one)" >&2; exit 1; }
	@docker info >/dev/null 2>&1 || { echo "make image: no Docker engine answers ('docker info' failed); start one or set DOCKER_HOST (go test ./deploy checks the Dockerfile without one)" >&2; exit 1; }
	docker build --build-arg VERSION=$(VERSION) --build-arg COMMIT=$(COMMIT) -t $(IMAGE):$(VERSION) .

install-servers: ## install the pinned local DynamoDB and Kinesis servers (npm ci)
	@scripts/localaws.sh install

# -p 4: the end-to-end packages mostly wait (timers, the local servers), about
# half a core each, so four at a time on two cores finish sooner than two;
# -timeout 30m: cmd alone ran about 10 minutes, go test's default limit
# (4 to 5 minutes by itself now); kept as a margin.
# The longest packages are named first: go test starts packages in the order
# given, and ./... alone started runner (7 minutes) late, behind dozens of
# short ones, so the run ended minutes after everything else had.
SLOW_TESTS = ./cmd ./runner ./internal/tools/demo ./internal/testenv/fleetsim ./leasecore
test: install-servers vet fmt-check completions-check docs-check ## vet, gofmt, completions and docs checks, race tests, short fuzz
	go test -race -count=1 -timeout 30m -p 4 $(SLOW_TESTS) ./...
	go test -run=NONE -fuzz=FuzzDecodeLease -fuzztime=$(FUZZTIME) ./leasecore
	go test -run=NONE -fuzz=FuzzDecodeScan -fuzztime=$(FUZZTIME) ./leasecore
	go test -run=NONE -fuzz=FuzzMultiStreamFields -fuzztime=$(FUZZTIME) ./leasecore
	go test -run=NONE -fuzz=FuzzScan -fuzztime=$(FUZZTIME) ./internal/jsonscan

vet: ## go vet
	go vet ./...

fmt-check: ## fail when gofmt would change a file
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './node_modules/*')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

lint: vet fmt-check completions-check ## vet, gofmt and completions check, plus staticcheck when installed
	@if command -v staticcheck >/dev/null 2>&1; then staticcheck ./...; else echo "staticcheck not installed: skipped"; fi

completions: ## regenerate completions/ from the binary
	@tmp=$$(mktemp -d); trap 'rm -rf $$tmp' EXIT; go build -o $$tmp/kcltool . && \
	for s in $(SHELLS); do $$tmp/kcltool completion $$s > completions/kcltool.$$s; done

completions-check: ## fail when completions/ is out of date
	@tmp=$$(mktemp -d); trap 'rm -rf $$tmp' EXIT; go build -o $$tmp/kcltool . && \
	for s in $(SHELLS); do $$tmp/kcltool completion $$s > $$tmp/kcltool.$$s; \
	  if ! cmp -s $$tmp/kcltool.$$s completions/kcltool.$$s; then \
	    echo "completions/kcltool.$$s is out of date: run 'make completions'"; exit 1; fi; done

docs: ## regenerate the command reference: docs/cli (markdown) and docs/man (man pages)
	go run ./internal/tools/gendocs -out docs

docs-check: ## fail when docs/cli or docs/man are out of date
	@tmp=$$(mktemp -d); trap 'rm -rf $$tmp' EXIT; go run ./internal/tools/gendocs -out $$tmp && \
	for d in cli man; do \
	  if ! diff -r $$tmp/$$d docs/$$d >/dev/null 2>&1; then \
	    echo "docs/$$d is out of date: run 'make docs'"; diff -r $$tmp/$$d docs/$$d | head -20; exit 1; fi; done

fuzz: ## fuzz the lease and Scan answer decoders and the JSON scanner for longer (FUZZTIME=5m make fuzz)
	go test -run=NONE -fuzz=FuzzDecodeLease -fuzztime=$(FUZZTIME) ./leasecore
	go test -run=NONE -fuzz=FuzzDecodeScan -fuzztime=$(FUZZTIME) ./leasecore
	go test -run=NONE -fuzz=FuzzMultiStreamFields -fuzztime=$(FUZZTIME) ./leasecore
	go test -run=NONE -fuzz=FuzzScan -fuzztime=$(FUZZTIME) ./internal/jsonscan

up: ## start the local servers on 127.0.0.1 (ports 18000-18002)
	@scripts/localaws.sh up

down: ## stop the local servers
	@scripts/localaws.sh down

# KEEP=1 leaves the servers up with the demo's data: they keep it in memory
# only, so stopping them (or 'make up', which restarts them) loses it.
demo: build up ## the main job end to end: 4-shard stream, two workers, a split, a takeover, the operator views (KEEP=1: servers stay up with its data)
	@eval "$$(scripts/localaws.sh env)" && go run ./internal/tools/demo -kcltool $(BIN) -kcl-version $(DEMO_KCL) $(if $(filter 1 yes true,$(KEEP)),-keep); status=$$?; \
	  if [ -z "$(filter 1 yes true,$(KEEP))" ]; then \
	    scripts/localaws.sh down; \
	    [ $$status -eq 0 ] && echo && echo "demo done; the local servers are stopped and their data is gone. 'make demo KEEP=1' leaves them up with the demo's data to explore."; \
	  fi; \
	  exit $$status

DEMO_KCL ?= 2

demo-kcl3: ## the demo on a KCL 3.x application: a leader elected among the workers assigns and balances the leases
	@$(MAKE) --no-print-directory demo DEMO_KCL=3

# One package at a time (-p 1): benchmarks running side by side would measure
# each other. pipefail keeps a failing benchmark's exit status.
bench: SHELL := /bin/bash
bench: .SHELLFLAGS := -o pipefail -c
bench: install-servers ## benchmarks: figures and ratios against a peer measured in the same run
	KCLTOOL_BENCH=1 go test -p 1 -count=1 -timeout 50m -run 'TestBench' -v ./... 2>&1 | grep -E '^(bench|---|ok|FAIL)' | grep -v -- '--- SKIP'
