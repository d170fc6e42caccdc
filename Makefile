# mpspatch — build, test, benchmark.
GO        ?= go
BIN       := bin/mpspatch
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -X github.com/mpspatch/mpspatch/internal/cli.version=$(VERSION)
FUZZTIME  ?= 4s
# The Python with torch and pytest: $MPSPATCH_PYTHON, else /usr/bin/python3. One Go package
# (internal/testenv) decides for the Go tests and, through this command, for make; when
# there is none it says what is missing and how to get it.
FINDPYTHON = $(GO) run ./internal/testenv/findpython
# Everything else the tests take from the machine (git, Python with torch, pytest and venv,
# cmake, ninja, gcc, ccache, redis-server, chromium): one list in internal/testenv, checked
# in seconds before any test runs, every missing thing named at once with the one apt-get
# command that installs them all. .ci/run installs from the same list; README names it.
PREFLIGHT  = $(GO) run ./internal/testenv/preflight
PKGS      := ./...
# Tests re-run race-enabled binaries as children (fake python, probe child, crash tests);
# without this each of their exits sleeps a second waiting for race reports.
export GORACE := atexit_sleep_ms=0

.PHONY: all build test check preflight preflight-short unit race lint vet fmt-check cross fuzz bench python test-python docs clean workflows release release-check

all: build

## build: a static binary (CGO_ENABLED=0): nothing in mpspatch needs cgo, and a static
## binary starts without the dynamic loader (about 1 ms of every command's start-up).
build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/mpspatch

## test: everything CI runs — the preflight, format, vet, the workflows, race-enabled
## tests (the Python suites on CPU included, through TestVerifyEndToEnd), darwin
## cross-build, fuzz smoke, the release check. About 7 minutes on a 2-core machine; when
## anything the tests need is missing it fails in seconds, naming all of it and the one
## command that installs it.
test: preflight fmt-check vet workflows race cross fuzz release-check

## check: the edit loop — format, vet, unit tests without race or the real-tool tests
## (go test -short: no real pip, CMake, ccache, Python suites or browser). Under a minute;
## `make test` runs everything. Its preflight asks only for what -short uses (go, git).
check: preflight-short fmt-check vet
	$(GO) test -short -count=1 $(PKGS)

## preflight: does this machine have everything make test needs? Every missing tool named
## at once, with the apt-get command that installs them all; exit 1 in seconds.
preflight:
	@$(PREFLIGHT)

preflight-short:
	@$(PREFLIGHT) -short

## python: fail early, and say how to fix it, when no interpreter has torch and pytest.
python:
	@py=$$($(FINDPYTHON)) && echo "python: $$py (torch, pytest)"

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

## workflows: lint .github/workflows with actionlint (pinned in go.mod's tool block), so a
## broken workflow fails here and not on its first push.
workflows:
	$(GO) tool actionlint

## release: versioned archives for every platform in dist/, with SHA256SUMS. Archives are
## reproducible (sorted, fixed owner and mtime, gzip -n): the same commit gives the same bytes.
PLATFORMS ?= darwin/arm64 darwin/amd64 linux/amd64
DIST      ?= dist
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
release:
	@set -e; rm -rf $(DIST); mkdir -p $(DIST); \
	for p in $(PLATFORMS); do \
	  os=$${p%/*}; arch=$${p#*/}; name=mpspatch_$(VERSION)_$${os}_$${arch}; \
	  mkdir -p $(DIST)/$$name; \
	  GOOS=$$os GOARCH=$$arch CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS) -s -w' -o $(DIST)/$$name/mpspatch ./cmd/mpspatch; \
	  cp README.md $(DIST)/$$name/; \
	  tar -C $(DIST) --sort=name --owner=0 --group=0 --numeric-owner --mtime=@$(SOURCE_DATE_EPOCH) -cf - $$name | gzip -n > $(DIST)/$$name.tar.gz; \
	  rm -rf $(DIST)/$$name; echo "release: $(DIST)/$$name.tar.gz"; \
	done; \
	cd $(DIST) && sha256sum *.tar.gz > SHA256SUMS

## release-check: the release recipe, for this platform only, into a temporary directory:
## the checksums verify and the binary reports the stamped version and the series hash.
release-check:
	@set -e; tmp=$$(mktemp -d); trap 'rm -rf $$tmp' EXIT; \
	plat=$$($(GO) env GOOS)/$$($(GO) env GOARCH); \
	$(MAKE) -s release PLATFORMS=$$plat DIST=$$tmp VERSION=v0.0.0-check >/dev/null; \
	(cd $$tmp && sha256sum -c --quiet SHA256SUMS); \
	tar -C $$tmp -xzf $$tmp/mpspatch_v0.0.0-check_$$($(GO) env GOOS)_$$($(GO) env GOARCH).tar.gz; \
	out=$$($$tmp/mpspatch_v0.0.0-check_*/mpspatch version --json); \
	echo "$$out" | grep -q '"version": "v0.0.0-check"' || { echo "release-check: version not stamped: $$out"; exit 1; }; \
	echo "$$out" | grep -q '"series_hash": "[0-9a-f]\{64\}"' || { echo "release-check: no series hash: $$out"; exit 1; }; \
	echo "release-check: ok ($$plat)"

## fuzz: run every Fuzz target briefly; a panic on any input fails the build. A failing
## input is saved under the package's testdata/fuzz/ and replayed by `go test -run FuzzX`:
## when a run fails, its output is shown and the target is replayed; a failure that left no
## failing input behind (the fuzzing engine's own trouble on a loaded machine: a worker
## that did not answer in time) is reported, run once more, and fails only if it recurs.
fuzz:
	@set -e; out=$$(mktemp); trap 'rm -f $$out' EXIT; \
	for pkg in $$($(GO) list -f '{{.Dir}}' $(PKGS)); do \
	  for f in $$(grep -ho '^func Fuzz[A-Za-z0-9_]*' $$pkg/*_test.go 2>/dev/null | sed 's/func //'); do \
	    echo "fuzz $$f ($${pkg#$(CURDIR)/})"; \
	    if $(GO) test -run='^$$' -fuzz="^$$f$$" -fuzztime=$(FUZZTIME) $$pkg >$$out 2>&1; then continue; fi; \
	    cat $$out; \
	    if ls $$pkg/testdata/fuzz/$$f/* >/dev/null 2>&1 && ! git ls-files --error-unmatch $$pkg/testdata/fuzz/$$f/* >/dev/null 2>&1; then \
	      echo "fuzz $$f: a failing input was saved under $${pkg#$(CURDIR)/}/testdata/fuzz/$$f"; exit 1; \
	    fi; \
	    $(GO) test -count=1 -run="^$$f$$" $$pkg; \
	    echo "fuzz $$f: the run failed with no failing input saved; running it once more"; \
	    $(GO) test -run='^$$' -fuzz="^$$f$$" -fuzztime=$(FUZZTIME) $$pkg; \
	  done; \
	done

## test-python: the verify suites under plain pytest on CPU, in one process (Debian's
## python3-torch). Not part of `make test`, which runs the same suites through mpspatch verify
## (TestVerifyEndToEnd) and the harness self-tests under pytest (TestHarnessSelfTests).
test-python:
	@py=$$($(FINDPYTHON)) && $$py -m pytest -q verify/suites --device cpu -p no:cacheprovider

## bench: benchmarks with ratios against git and plain reads (see docs/performance.md).
bench:
	$(GO) test -run='^$$' -bench=. -benchtime=5x -count=1 $(PKGS)

docs:
	$(GO) run ./internal/docgen docs/cli

clean:
	rm -rf bin dist
