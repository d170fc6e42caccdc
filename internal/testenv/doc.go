// Package testenv is the one place that says what the tests take from the machine.
//
// FindPython decides which Python interpreter the tests use: every Go test that runs Python
// and every Makefile target (through the findpython command) ask it, so `make test` never
// runs one interpreter for Go and another for pytest. The choice: $MPSPATCH_PYTHON when
// set, else Debian's /usr/bin/python3. Either must import torch and pytest; when it does
// not, the error names the interpreter, what it lacks, and how to get it.
//
// Needs lists everything else too (Go, make, git, the Python modules, cmake, ninja, gcc,
// ccache with redis storage, redis-server, chromium), each with the Debian package that
// provides it. Preflight checks the lot in seconds and Report names every missing thing at
// once with the one apt-get command that installs them all: make test runs it first (the
// preflight command), .ci/run installs the packages it names, and README's list is held to
// it by a test. It is a test helper only: mpspatch itself takes --python or the config.
package testenv
