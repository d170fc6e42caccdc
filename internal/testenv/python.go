package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mpspatch/mpspatch/internal/run"
)

// DefaultPython is the interpreter Debian's python3-torch and python3-pytest install into.
// The `python3` first on PATH is often another one (pyenv, a venv) without torch.
const DefaultPython = "/usr/bin/python3"

// EnvVar names the interpreter to use instead of DefaultPython.
const EnvVar = "MPSPATCH_PYTHON"

// Required are the modules the suites and the tests import.
var Required = []string{"torch", "pytest"}

// FindPython returns the interpreter the tests use, or an error that says exactly what is
// missing and how to get it. getenv is os.Getenv outside tests of this package.
func FindPython(ctx context.Context, getenv func(string) string) (string, error) {
	py, from := getenv(EnvVar), "$"+EnvVar
	if py == "" {
		py, from = DefaultPython, "the default interpreter (set "+EnvVar+" to use another)"
	}
	missing, err := missingModules(ctx, py, nil, Required)
	if err != nil {
		return "", fmt.Errorf("test python %s, %s: cannot run it: %w\n%s", py, from, err, howToGet)
	}
	if len(missing) > 0 {
		return "", fmt.Errorf("test python %s, %s: cannot import %s\n%s", py, from, strings.Join(missing, " or "), howToGet)
	}
	return py, nil
}

const howToGet = `The tests need a Python 3 with torch and pytest. On Debian or Ubuntu:
    sudo apt-get install python3-torch python3-pytest python3-venv
(.ci/run installs exactly what the tests need), or point ` + EnvVar + ` at an interpreter
that has both, e.g. ` + EnvVar + `=$HOME/venv/bin/python make test`

// missingModules asks py which of modules it cannot find, without importing them (torch
// takes seconds to import; finding its spec takes milliseconds). A nil env is the
// process's own.
func missingModules(ctx context.Context, py string, env []string, modules []string) ([]string, error) {
	script := "import importlib.util as u, sys\n" +
		"print('" + missingTag + "', *(m for m in sys.argv[1:] if u.find_spec(m) is None))\n"
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	out, err := run.Output(ctx, run.Cmd{Argv: append([]string{py, "-c", script}, modules...), Env: env})
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, errors.New("no such file")
		}
		return nil, err
	}
	fields := strings.Fields(string(out))
	if len(fields) == 0 || fields[0] != missingTag {
		// Something that is not Python answered (/bin/true, a wrapper that swallows -c):
		// silence must not read as "nothing missing".
		return nil, fmt.Errorf("it did not answer the module probe as Python would (output %q)", truncate(string(out), 80))
	}
	return fields[1:], nil
}

// missingTag starts the probe's answer, so only a real Python's answer counts.
const missingTag = "missing:"

func truncate(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

var (
	once     sync.Once
	onceErr  error
	onceName string
)

// Python returns the tests' interpreter, found once per test binary; a test that needs
// Python fails with FindPython's explanation when there is none. Under -short (make check,
// the edit loop) such a test is skipped: real interpreters take most of make test's time,
// and make test runs them all.
func Python(tb testing.TB) string {
	tb.Helper()
	if testing.Short() {
		tb.Skip("starts a real Python with torch: make test runs it, -short (make check) does not")
	}
	once.Do(func() { onceName, onceErr = FindPython(context.Background(), os.Getenv) })
	if onceErr != nil {
		tb.Fatal(onceErr)
	}
	return onceName
}
