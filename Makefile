# mpspatch — build, test, benchmark.
GO        ?= go
BIN       := bin/mpspatch
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -X github.com/mpspatch/mpspatch/internal/cli.version=$(VERSION)
FUZZTIME  ?= 4s
PYTHON    ?= $(or $(MPSPATCH_PYTHON),python3)
PKGS      := ./...
# Tests re-run race-enabled binaries as children (fake python, probe child, crash tests);
# without this each of their exits sleeps a second waiting for race reports.
export GORACE := atexit_sleep_ms=0

.PHONY: all build test unit race lint vet fmt-check cross fuzz bench test-python docs clean

all: build

build:
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/mpspatch

## test: everything CI runs — format, vet, race-enabled tests, darwin cross-build, fuzz smoke.
test: fmt-check vet race cross fuzz test-python

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

race:
	$(GO) test -race -count=1 $(PKGS)

unit:
	$(GO) test -count=1 $(PKGS)

## cross: the darwin/arm64 build (Metal probe behind build tags, purego, no cgo) must compile and vet.
cross:
	GOOS=darwin GOARCH=arm64 CGO_ENABLED=0 $(GO) build ./...
	GOOS=darwin GOARCH=arm64 CGO_ENABLED=0 $(GO) vet ./...

## fuzz: run every Fuzz target briefly; a panic on any input fails the build.
fuzz:
	@set -e; for pkg in $$($(GO) list -f '{{.Dir}}' $(PKGS)); do \
	  for f in $$(grep -ho '^func Fuzz[A-Za-z0-9_]*' $$pkg/*_test.go 2>/dev/null | sed 's/func //'); do \
	    echo "fuzz $$f ($${pkg#$(CURDIR)/})"; \
	    $(GO) test -run='^$$' -fuzz="^$$f$$" -fuzztime=$(FUZZTIME) $$pkg >/dev/null || \
	      { $(GO) test -run='^$$' -fuzz="^$$f$$" -fuzztime=$(FUZZTIME) $$pkg; exit 1; }; \
	  done; \
	done

## test-python: the verify suites under plain pytest on CPU (Debian's python3-torch).
test-python:
	@if [ -d verify/suites ] && ls verify/suites/test_*.py >/dev/null 2>&1; then \
	  $(PYTHON) -m pytest -q verify/suites --device cpu -p no:cacheprovider; \
	else echo "no python suites yet"; fi

## bench: benchmarks with ratios against git and plain reads (see docs/performance.md).
bench:
	$(GO) test -run='^$$' -bench=. -benchtime=5x -count=1 $(PKGS)

docs: build
	$(BIN) gen-docs docs/cli

clean:
	rm -rf bin
