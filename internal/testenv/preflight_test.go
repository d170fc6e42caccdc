package testenv

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// fakeTool writes an executable named name into dir that prints out and exits 0, as a
// tool answering --version would.
func fakeTool(t *testing.T, dir, name, out string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	// printf is a shell builtin: the fake needs nothing from the PATH it is tested under.
	script := "#!/bin/sh\nprintf '%s\\n' '" + strings.ReplaceAll(out, "'", `'\''`) + "'\n"
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// fakeMachine is a machine whose PATH is only bin and whose Chromium is looked for only
// there: nothing of the real machine leaks in.
func fakeMachine(bin string, env map[string]string) *Machine {
	return &Machine{
		Getenv: func(k string) string {
			if k == "PATH" {
				return bin
			}
			return env[k]
		},
		GoVersion: "go1.26.1", GoWant: "go1.26.0",
		ChromiumPaths: []string{filepath.Join(bin, "no-chromium-here")},
	}
}

const goodCcache = "ccache version 4.7.5\nFeatures: file-storage http-storage redis+unix-storage redis-storage"

// fullBin is a PATH directory with every tool the tests need, as fakes.
func fullBin(t *testing.T) (bin string, env map[string]string) {
	t.Helper()
	bin = t.TempDir()
	for _, name := range []string{"make", "git", "cmake", "ninja", "cc", "redis-server", "chromium"} {
		fakeTool(t, bin, name, name+" version 1.0")
	}
	fakeTool(t, bin, "ccache", goodCcache)
	return bin, map[string]string{EnvVar: fakePython(t, "torch", "pytest", "ensurepip")}
}

func names(missing []Shortfall) []string {
	var out []string
	for _, s := range missing {
		out = append(out, s.Need.Name)
	}
	return out
}

// TestPreflightNamesEverythingMissingAtOnce: a machine lacking many things gets one report
// naming each of them, why, and one command that installs every missing package, and
// nothing that is present.
func TestPreflightNamesEverythingMissingAtOnce(t *testing.T) {
	t.Parallel()
	bin := t.TempDir()
	fakeTool(t, bin, "make", "GNU Make 4.3")
	fakeTool(t, bin, "git", "git version 2.39.5")
	fakeTool(t, bin, "ccache", "ccache version 4.6.3\nFeatures: file-storage redis-storage")
	m := fakeMachine(bin, map[string]string{EnvVar: fakePython(t, "pytest")})
	m.GoVersion = "go1.25.3"

	missing := Preflight(context.Background(), m, false)
	want := []string{"go", "python3 module torch", "python3 module venv (ensurepip)", "cmake", "ninja", "cc",
		"ccache 4.7+ with redis storage", "redis-server", "chromium"}
	if have := names(missing); !slices.Equal(have, want) {
		t.Fatalf("missing:\nhave %q\nwant %q", have, want)
	}
	report := Report(missing, m)
	for _, w := range []string{
		"the tests need 9 things this machine lacks",
		"have go1.25.3, go.mod needs go1.26.0 or newer",
		"https://go.dev/dl/",
		"cannot import torch",
		"cannot import ensurepip",
		"have ccache 4.6.3, need 4.7 or newer",
		"cmake                            not found in PATH; needed by the builder's real CMake build\n",
		"chromium                         not found (tried $MPSPATCH_CHROMIUM",
		"\n    apt-get install -y --no-install-recommends python3-torch python3-venv cmake ninja-build gcc ccache redis-server chromium\n",
		"install torch and ensurepip into it instead",
	} {
		if !strings.Contains(report, w) {
			t.Errorf("report lacks %q:\n%s", w, report)
		}
	}
	for _, present := range []string{"  make ", "  git ", "python3-pytest"} {
		if strings.Contains(report, present) {
			t.Errorf("report names %q, which is present:\n%s", present, report)
		}
	}
}

// TestPreflightAllPresent: with every tool there, nothing is missing; -short checks only
// go, make and git, so a machine with just those passes it.
func TestPreflightAllPresent(t *testing.T) {
	t.Parallel()
	bin, env := fullBin(t)
	if missing := Preflight(context.Background(), fakeMachine(bin, env), false); len(missing) != 0 {
		t.Errorf("have missing %q, want none", names(missing))
	}

	bare := t.TempDir()
	fakeTool(t, bare, "make", "GNU Make 4.3")
	fakeTool(t, bare, "git", "git version 2.39.5")
	m := fakeMachine(bare, map[string]string{EnvVar: filepath.Join(bare, "no-python")})
	if missing := Preflight(context.Background(), m, true); len(missing) != 0 {
		t.Errorf("-short: have missing %q, want none", names(missing))
	}
	if missing := Preflight(context.Background(), m, false); len(missing) != 10 {
		t.Errorf("without -short: have missing %q, want all 10 but go, make and git", names(missing))
	}
	empty := fakeMachine(t.TempDir(), nil)
	if have := names(Preflight(context.Background(), empty, true)); !slices.Equal(have, []string{"make", "git"}) {
		t.Errorf("-short on an empty PATH: have %q, want make and git", have)
	}
}

// TestPreflightCcacheAndPython: a ccache without redis storage, and a "python" that does
// not answer as Python does, are missing, not present.
func TestPreflightCcacheAndPython(t *testing.T) {
	t.Parallel()
	bin, env := fullBin(t)
	fakeTool(t, bin, "ccache", "ccache version 4.8.2\nFeatures: file-storage http-storage")
	env[EnvVar] = fakeTool(t, t.TempDir(), "python", "Python 3.11.2")
	m := fakeMachine(bin, env)
	missing := Preflight(context.Background(), m, false)
	want := []string{"python3", "python3 module torch", "python3 module pytest", "python3 module venv (ensurepip)", "ccache 4.7+ with redis storage"}
	if have := names(missing); !slices.Equal(have, want) {
		t.Fatalf("missing: have %q, want %q", have, want)
	}
	report := Report(missing, m)
	for _, w := range []string{"built without redis storage", "did not answer the module probe",
		"apt-get install -y --no-install-recommends python3 python3-torch python3-pytest python3-venv ccache\n"} {
		if !strings.Contains(report, w) {
			t.Errorf("report lacks %q:\n%s", w, report)
		}
	}
}

// TestChromiumLookup: $MPSPATCH_CHROMIUM first, then the fixed paths, then PATH.
func TestChromiumLookup(t *testing.T) {
	t.Parallel()
	bin := t.TempDir()
	inPath := fakeTool(t, bin, "chromium-browser", "Chromium 1")
	fixed := fakeTool(t, t.TempDir(), "chromium", "Chromium 2")
	chosen := fakeTool(t, t.TempDir(), "my-chromium", "Chromium 3")

	m := fakeMachine(bin, nil)
	if have, err := m.Chromium(); err != nil || have != inPath {
		t.Errorf("PATH: have %q, %v; want %s", have, err, inPath)
	}
	m.ChromiumPaths = []string{fixed}
	if have, err := m.Chromium(); err != nil || have != fixed {
		t.Errorf("fixed path: have %q, %v; want %s", have, err, fixed)
	}
	m = fakeMachine(bin, map[string]string{ChromiumEnvVar: chosen})
	m.ChromiumPaths = []string{fixed}
	if have, err := m.Chromium(); err != nil || have != chosen {
		t.Errorf("$MPSPATCH_CHROMIUM: have %q, %v; want %s", have, err, chosen)
	}
	m = fakeMachine(bin, map[string]string{ChromiumEnvVar: filepath.Join(bin, "gone")})
	if _, err := m.Chromium(); err == nil || !strings.Contains(err.Error(), "$MPSPATCH_CHROMIUM=") {
		t.Errorf("a $MPSPATCH_CHROMIUM that does not exist: have %v, want an error naming it", err)
	}
}

// TestGoModVersion reads the go line of this module's go.mod from a directory below it.
func TestGoModVersion(t *testing.T) {
	t.Parallel()
	have := goModVersion(".")
	if !regexp.MustCompile(`^go1\.[0-9]+(\.[0-9]+)?$`).MatchString(have) {
		t.Errorf("goModVersion: have %q, want go1.N.M", have)
	}
	if have := goModVersion(t.TempDir()); have != "" {
		t.Errorf("no go.mod above a temp dir: have %q, want empty", have)
	}
}

// TestPackageListsAgree: README's install command and .ci/run take the same package list
// as the preflight: README names exactly Packages(Needs()), and .ci/run asks the preflight
// rather than keeping a list of its own.
func TestPackageListsAgree(t *testing.T) {
	t.Parallel()
	want := Packages(Needs())
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	cmds := regexp.MustCompile(`(?m)^\s*(?:sudo )?apt-get install((?: -\S+)*)((?: [a-z0-9.+-]+)+)\s*$`).FindAllSubmatch(readme, -1)
	if len(cmds) != 1 {
		t.Fatalf("README has %d apt-get install lines, want exactly one", len(cmds))
	}
	if have := strings.Fields(string(cmds[0][2])); !slices.Equal(have, want) {
		t.Errorf("README's apt-get install line:\nhave %q\nwant %q (testenv.Needs)", have, want)
	}
	ci, err := os.ReadFile("../../.ci/run")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(ci), "internal/testenv/preflight -missing-packages") {
		t.Errorf(".ci/run does not take its package list from the preflight (-missing-packages)")
	}
	if strings.Contains(string(ci), "need+=(") {
		t.Errorf(".ci/run keeps a package list of its own")
	}
}
