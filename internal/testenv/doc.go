// Package testenv is the one place that decides which Python interpreter the tests use:
// every Go test that runs Python and every Makefile target (through the findpython
// command) ask it, so `make test` never runs one interpreter for Go and another for pytest.
//
// The choice: $MPSPATCH_PYTHON when set, else Debian's /usr/bin/python3. Either must import
// torch and pytest; when it does not, the error names the interpreter, what it lacks, and
// how to get it. It is a test helper only: mpspatch itself takes --python or the config.
package testenv
