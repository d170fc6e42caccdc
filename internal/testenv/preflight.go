package testenv

import (
	"context"
	"errors"
	"fmt"
	"go/version"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mpspatch/mpspatch/internal/run"
)

// A Need is one thing the tests take from the machine rather than from the module: a tool,
// an interpreter, a Python module. Needs lists them all; the preflight checks them, .ci/run
// installs their packages, and README names the same packages (a test holds the three to
// one list).
type Need struct {
	// Name is what the report calls it ("cmake", "python3 module torch").
	Name string
	// For says which tests use it, so a person knows what a missing one costs.
	For string
	// Package is the Debian (and Ubuntu) package that provides it; empty for Go, which
	// Debian ships too old (Install says where to get it instead).
	Package string
	// Install, when set, is how to get it where no package does.
	Install string
	// Short marks what `go test -short` (make check) needs too; the rest only make test.
	Short bool

	check func(ctx context.Context, m *Machine) error
}

// Needs returns everything the tests need, in the order the report lists it.
func Needs() []Need {
	return []Need{
		{Name: "go", For: "every test: go.mod's go line", Short: true,
			Install: "Go from https://go.dev/dl/ (Debian's golang package is older)", check: checkGo},
		{Name: "make", For: "make test and make check themselves", Package: "make", Short: true,
			check: onPath("make")},
		{Name: "git", For: "the apply, stack, upstream and CLI tests, which run real git", Package: "git", Short: true,
			check: onPath("git")},
		{Name: "python3", For: "the Python suites and the builder's real pip build", Package: "python3",
			check: func(ctx context.Context, m *Machine) error { return m.python(ctx).err }},
		{Name: "python3 module torch", For: "the Python suites on CPU (verify's TestVerifyEndToEnd)", Package: "python3-torch",
			check: pythonModule("torch")},
		{Name: "python3 module pytest", For: "the suites' harness self-tests (verify's TestHarnessSelfTests)", Package: "python3-pytest",
			check: pythonModule("pytest")},
		{Name: "python3 module venv (ensurepip)", For: "the builder's real pip build in a fresh virtual environment", Package: "python3-venv",
			check: pythonModule("ensurepip")},
		{Name: "cmake", For: "the builder's real CMake build", Package: "cmake", check: answers("cmake")},
		{Name: "ninja", For: "the builder's real CMake build", Package: "ninja-build", check: answers("ninja")},
		{Name: "cc", For: "the builder's real CMake build, as its C compiler", Package: "gcc", check: answers("cc")},
		{Name: "ccache " + minCcache + "+ with redis storage", For: "the builder's shared compiler cache test",
			Package: "ccache", check: checkCcache},
		{Name: "redis-server", For: "the builder's shared compiler cache test, which starts it on loopback",
			Package: "redis-server", check: answers("redis-server")},
		{Name: "chromium", For: "verify's HTML report test, which renders the page headless", Package: "chromium",
			check: func(_ context.Context, m *Machine) error { _, err := m.Chromium(); return err }},
	}
}

// minCcache is the oldest ccache the shared cache test works with: --print-stats came in 4.7.
const minCcache = "4.7"

// Packages returns the Debian packages that provide needs, each once, in order.
func Packages(needs []Need) []string {
	var out []string
	for _, n := range needs {
		if n.Package != "" && !slices.Contains(out, n.Package) {
			out = append(out, n.Package)
		}
	}
	return out
}

// Machine is what the preflight looks at. Its fields default to the real machine (see
// ThisMachine); tests point them at fakes.
type Machine struct {
	// Getenv reads PATH, MPSPATCH_PYTHON and MPSPATCH_CHROMIUM.
	Getenv func(string) string
	// GoVersion is the toolchain the tests are built with; GoWant go.mod's go line
	// ("go1.26.0"). An empty GoWant skips the comparison.
	GoVersion, GoWant string
	// ChromiumPaths are tried before PATH, as the HTML test tries them (Debian's
	// /usr/bin/chromium).
	ChromiumPaths []string

	py *pythonProbe
}

// ThisMachine is the machine the command runs on: its environment, the toolchain that
// built it, and the go.mod found from dir upwards.
func ThisMachine(goVersion, dir string) *Machine {
	return &Machine{Getenv: os.Getenv, GoVersion: goVersion, GoWant: goModVersion(dir),
		ChromiumPaths: []string{DefaultChromium}}
}

// DefaultChromium is where Debian's chromium package puts the browser.
const DefaultChromium = "/usr/bin/chromium"

// ChromiumEnvVar names the browser to use instead of the default.
const ChromiumEnvVar = "MPSPATCH_CHROMIUM"

// Chromium returns the browser the HTML test renders with on this machine (see
// Machine.Chromium): the test and the preflight look in the same places.
func Chromium() (string, error) {
	return (&Machine{Getenv: os.Getenv, ChromiumPaths: []string{DefaultChromium}}).Chromium()
}

// Chromium returns the browser the HTML test renders with: $MPSPATCH_CHROMIUM, else the
// first of ChromiumPaths that exists, else chromium or chromium-browser in PATH.
func (m *Machine) Chromium() (string, error) {
	if c := m.Getenv(ChromiumEnvVar); c != "" {
		p, err := m.lookPath(c)
		if err != nil {
			return "", fmt.Errorf("$%s=%s: %w", ChromiumEnvVar, c, err)
		}
		return p, nil
	}
	for _, p := range m.ChromiumPaths {
		if isExecutable(p) {
			return p, nil
		}
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := m.lookPath(name); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("not found (tried $%s, %s, and chromium or chromium-browser in PATH)",
		ChromiumEnvVar, strings.Join(m.ChromiumPaths, ", "))
}

// A Shortfall is a Need the machine does not meet, and why.
type Shortfall struct {
	Need   Need
	Reason string
}

// Preflight checks every need (only the Short ones when short is set) and returns each
// that is not met. It never stops at the first: the point is to name them all at once.
func Preflight(ctx context.Context, m *Machine, short bool) []Shortfall {
	var out []Shortfall
	for _, n := range Needs() {
		if short && !n.Short {
			continue
		}
		if err := n.check(ctx, m); err != nil {
			out = append(out, Shortfall{Need: n, Reason: err.Error()})
		}
	}
	return out
}

// Report explains missing for a person: each shortfall with the tests it costs, then the
// one command that installs every missing package.
func Report(missing []Shortfall, m *Machine) string {
	var b strings.Builder
	noun := "things"
	if len(missing) == 1 {
		noun = "thing"
	}
	fmt.Fprintf(&b, "preflight: the tests need %d %s this machine lacks:\n", len(missing), noun)
	width := 0
	for _, s := range missing {
		width = max(width, len(s.Need.Name))
	}
	var needs []Need
	for _, s := range missing {
		fmt.Fprintf(&b, "  %-*s  %s; needed by %s\n", width, s.Need.Name, s.Reason, s.Need.For)
		needs = append(needs, s.Need)
	}
	if pkgs := Packages(needs); len(pkgs) > 0 {
		fmt.Fprintf(&b, "Install them all at once (Debian or Ubuntu, as root):\n    %s\n", InstallCommand(pkgs))
		b.WriteString(".ci/run installs what is missing the same way and then runs make test.\n")
	}
	for _, n := range needs {
		if n.Install != "" {
			fmt.Fprintf(&b, "%s: install %s\n", n.Name, n.Install)
		}
	}
	if py := m.Getenv(EnvVar); py != "" && m.py != nil && m.py.err == nil && len(m.py.missing) > 0 {
		fmt.Fprintf(&b, "($%s=%s: the python3 packages go to /usr/bin/python3; for that interpreter, install %s into it instead.)\n",
			EnvVar, py, strings.Join(m.py.missing, " and "))
	}
	return b.String()
}

// InstallCommand is the one command that installs pkgs.
func InstallCommand(pkgs []string) string {
	return "apt-get install -y --no-install-recommends " + strings.Join(pkgs, " ")
}

func checkGo(_ context.Context, m *Machine) error {
	if m.GoWant == "" || !version.IsValid(m.GoVersion) {
		return nil // a development toolchain, or no go.mod found: nothing to compare
	}
	if version.Compare(m.GoVersion, m.GoWant) < 0 {
		return fmt.Errorf("have %s, go.mod needs %s or newer", m.GoVersion, m.GoWant)
	}
	return nil
}

// goModVersion returns the go line of the go.mod in dir or above it, as "go1.26.0", or ""
// when there is none.
func goModVersion(dir string) string {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return ""
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil {
			if m := goLine.FindSubmatch(data); m != nil {
				return "go" + string(m[1])
			}
			return ""
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

var goLine = regexp.MustCompile(`(?m)^go\s+([0-9][0-9.]*)\s*$`)

// onPath is a need met by an executable of that name in PATH.
func onPath(name string) func(context.Context, *Machine) error {
	return func(_ context.Context, m *Machine) error {
		_, err := m.lookPath(name)
		return err
	}
}

// answers is a need met by a tool in PATH that answers --version.
func answers(name string) func(context.Context, *Machine) error {
	return func(ctx context.Context, m *Machine) error {
		_, err := m.version(ctx, name)
		return err
	}
}

// probeTimeout bounds each probe: a tool that does not answer --version in this long is
// as good as missing, and the preflight must end in seconds, not hang.
const probeTimeout = 30 * time.Second

// version runs `name --version` from PATH and returns its output.
func (m *Machine) version(ctx context.Context, name string) (string, error) {
	path, err := m.lookPath(name)
	if err != nil {
		return "", err
	}
	out, err := run.Output(ctx, run.Cmd{Argv: []string{path, "--version"}, Env: m.env(), Timeout: probeTimeout})
	if err != nil {
		return "", fmt.Errorf("%s --version failed: %v", path, err)
	}
	return string(out), nil
}

var ccacheVersion = regexp.MustCompile(`(?m)^ccache version ([0-9]+(?:\.[0-9]+)*)`)

func checkCcache(ctx context.Context, m *Machine) error {
	out, err := m.version(ctx, "ccache")
	if err != nil {
		return err
	}
	v := ccacheVersion.FindStringSubmatch(out)
	if v == nil {
		return fmt.Errorf("ccache --version does not say its version: %q", firstLine(out))
	}
	if compareDotted(v[1], minCcache) < 0 {
		return fmt.Errorf("have ccache %s, need %s or newer", v[1], minCcache)
	}
	if !strings.Contains(out, "redis-storage") {
		return fmt.Errorf("ccache %s was built without redis storage (its Features line lacks redis-storage)", v[1])
	}
	return nil
}

// compareDotted compares dotted decimal versions ("4.7.5" against "4.7").
func compareDotted(a, b string) int {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < max(len(as), len(bs)); i++ {
		var x, y int
		if i < len(as) {
			x, _ = strconv.Atoi(as[i])
		}
		if i < len(bs) {
			y, _ = strconv.Atoi(bs[i])
		}
		if x != y {
			return x - y
		}
	}
	return 0
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}

// pythonProbe is the one look at the tests' interpreter every Python need shares.
type pythonProbe struct {
	name    string   // the interpreter, as the report names it
	missing []string // modules it cannot find
	err     error    // it could not be run at all
}

// pythonModules are the modules the Python needs check, found in one run of the interpreter.
var pythonModules = []string{"torch", "pytest", "ensurepip"}

func (m *Machine) python(ctx context.Context) *pythonProbe {
	if m.py != nil {
		return m.py
	}
	py, from := m.Getenv(EnvVar), "$"+EnvVar
	if py == "" {
		py, from = DefaultPython, "the default"
	}
	m.py = &pythonProbe{name: py}
	path, err := m.lookPath(py)
	if err != nil {
		m.py.err = fmt.Errorf("%s (%s): %w", py, from, err)
		return m.py
	}
	missing, err := missingModules(ctx, path, m.env(), pythonModules)
	if err != nil {
		m.py.err = fmt.Errorf("%s (%s) does not run: %w", py, from, err)
		return m.py
	}
	m.py.missing = missing
	return m.py
}

// pythonModule is a need met when the tests' interpreter finds module.
func pythonModule(module string) func(context.Context, *Machine) error {
	return func(ctx context.Context, m *Machine) error {
		p := m.python(ctx)
		if p.err != nil {
			return errors.New("cannot be checked: no python3 to look in")
		}
		if slices.Contains(p.missing, module) {
			return fmt.Errorf("%s cannot import %s", p.name, module)
		}
		return nil
	}
}

// env is the environment probes run with: the process's own, with Getenv's PATH, so a
// tool finds what it needs where the tests would.
func (m *Machine) env() []string {
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "PATH=") })
	return append(env, "PATH="+m.Getenv("PATH"))
}

// lookPath finds name as exec.LookPath would, but in Getenv's PATH rather than the
// process's, so a test can hand the preflight a PATH of its own. A name with a slash is
// taken as it is.
func (m *Machine) lookPath(name string) (string, error) {
	if strings.Contains(name, "/") {
		if isExecutable(name) {
			return name, nil
		}
		if _, err := os.Stat(name); err != nil {
			return "", errors.New("no such file")
		}
		return "", errors.New("not an executable file")
	}
	for _, dir := range filepath.SplitList(m.Getenv("PATH")) {
		if dir == "" {
			continue // an empty entry means the current directory, which the tests never rely on
		}
		if p := filepath.Join(dir, name); isExecutable(p) {
			return p, nil
		}
	}
	return "", errors.New("not found in PATH")
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}
