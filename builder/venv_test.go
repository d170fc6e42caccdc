package builder

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mpspatch/mpspatch/internal/run"
)

func TestRequirements(t *testing.T) {
	tree := t.TempDir()
	args, h0, err := requirements(tree)
	if err != nil || len(args) != 0 {
		t.Fatalf("empty tree: %q, %v", args, err)
	}
	os.WriteFile(filepath.Join(tree, "requirements.txt"), []byte("numpy\npyyaml\n"), 0o644)
	os.WriteFile(filepath.Join(tree, "pyproject.toml"), []byte("[build-system]\nrequires = [\"setuptools>=70.1.0\", \"cmake>=3.27\", \"ninja\"]\n[tool.x]\ny = 1\n"), 0o644)
	args, h1, err := requirements(tree)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"-r", "requirements.txt", "setuptools>=70.1.0", "cmake>=3.27", "ninja"}; !slices.Equal(args, want) {
		t.Errorf("args %q, want %q", args, want)
	}
	os.WriteFile(filepath.Join(tree, "requirements.txt"), []byte("numpy\npyyaml\ntyping-extensions\n"), 0o644)
	if _, h2, _ := requirements(tree); h2 == h1 || h1 == h0 {
		t.Error("the hash does not follow requirements.txt")
	}
	os.WriteFile(filepath.Join(tree, "pyproject.toml"), []byte("[build-system]\nrequires = [\n"), 0o644)
	if _, _, err := requirements(tree); err == nil || !strings.Contains(err.Error(), "pyproject.toml:") {
		t.Errorf("bad pyproject.toml: %v, want an error naming file:line", err)
	}
}

// TestBuildRealVenv: --venv creates the environment with the real python, installs the
// tree's requirements offline from a local wheel with progress, builds in it, and names a
// requirement that cannot be found.
func TestBuildRealVenv(t *testing.T) {
	t.Parallel() // each has its own venv, trees and caches
	needTools(t, "cmake", "ninja", "cc")
	ctx := context.Background()
	base := os.Getenv("MPSPATCH_PYTHON")
	if base == "" {
		base = "/usr/bin/python3"
	}
	wheels := t.TempDir()
	writeWheel(t, wheels, "mpspatch-req-fixture", "1.0", map[string]string{"mpspatch_req_fixture.py": "OK = True\n"})
	env := append(os.Environ(), "PIP_NO_INDEX=1", "PIP_FIND_LINKS="+wheels, "PIP_NO_CACHE_DIR=1", "PIP_DISABLE_PIP_VERSION_CHECK=1")
	tree := copyTree(t)
	os.WriteFile(filepath.Join(tree, "requirements.txt"), []byte("mpspatch-req-fixture==1.0\n"), 0o644)
	venv := filepath.Join(t.TempDir(), "venvs", "torch")
	rec := &recorder{}
	opts := Options{Tree: tree, Python: base, Venv: venv, BaseEnv: env, GOOS: "linux", Cache: CacheOptions{Tool: "none"}, Reporter: rec}
	res, err := Build(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Venv) != 2 || !strings.HasPrefix(res.Venv[0], "created ") || !strings.Contains(res.Venv[1], "-r requirements.txt") {
		t.Errorf("venv steps %q, want created and requirements installed", res.Venv)
	}
	var reqLines []string
	for _, e := range rec.all() {
		if e.Phase == PhaseRequirements {
			reqLines = append(reqLines, e.Line)
		}
	}
	if !slices.ContainsFunc(reqLines, func(l string) bool { return strings.Contains(l, "mpspatch-req-fixture") }) ||
		!slices.ContainsFunc(reqLines, func(l string) bool { return strings.HasPrefix(l, "Successfully installed") }) {
		t.Errorf("requirements progress %q, want the requirement collected and installed", reqLines)
	}
	py := venvPython(venv)
	if res.Provenance.Python != py {
		t.Errorf("built with %s, want the venv's %s", res.Provenance.Python, py)
	}
	if _, err := run.Output(ctx, run.Cmd{Argv: []string{py, "-c", "import mpspatch_req_fixture"}, Env: env}); err != nil {
		t.Errorf("the requirement is not importable in the venv: %v", err)
	}

	// Again: the venv is there and its requirements unchanged, the build up to date.
	res, err = Build(ctx, opts)
	if err != nil || !res.UpToDate || len(res.Venv) != 0 {
		t.Errorf("second run: %+v, %v; want up to date and nothing done to the venv", res, err)
	}

	// A requirement nobody has: named, and called offline (no index).
	os.WriteFile(filepath.Join(tree, "requirements.txt"), []byte("mpspatch-req-fixture==1.0\nmpspatch-no-such-req>=2\n"), 0o644)
	_, err = Build(ctx, opts)
	var re *RequirementError
	var ee *EnvError
	if !errors.As(err, &re) || !errors.As(err, &ee) || re.Requirement != "mpspatch-no-such-req>=2" || !re.Offline {
		t.Fatalf("error = %v, want an *EnvError wrapping a *RequirementError for mpspatch-no-such-req>=2, offline", err)
	}
	if !strings.Contains(err.Error(), `requirement "mpspatch-no-such-req>=2"`) || !strings.Contains(err.Error(), re.LogPath) {
		t.Errorf("message %q should name the requirement and the log", err)
	}
}
