package builder

import (
	"archive/zip"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mpspatch/mpspatch/internal/gitcli"
	"github.com/mpspatch/mpspatch/internal/run"
)

// realVenv creates a fresh virtual environment for tests that run the real pip offline.
func realVenv(t testing.TB) (python string, env []string) {
	t.Helper()
	base := os.Getenv("MPSPATCH_PYTHON")
	if base == "" {
		base = "/usr/bin/python3"
	}
	venv := filepath.Join(t.TempDir(), "venv")
	if _, err := run.Output(context.Background(), run.Cmd{Argv: []string{base, "-m", "venv", venv}}); err != nil {
		t.Fatalf("create a virtual environment with %s (Debian: python3-venv; set MPSPATCH_PYTHON for another interpreter): %v", base, err)
	}
	return venvPython(venv), append(os.Environ(), "PIP_NO_INDEX=1", "PIP_NO_CACHE_DIR=1", "PIP_DISABLE_PIP_VERSION_CHECK=1")
}

// needTools marks a test that runs the real build tools. Under -short (make check, the
// edit loop) it is skipped: a real pip, CMake and ccache build takes minutes, and make test
// runs every one. Otherwise it fails (never skips) when a tool is missing: CI installs them
// (.ci/run, from the preflight's list), so a missing one is a broken machine, not a reason
// to pass.
func needTools(t testing.TB, tools ...string) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the real build tools (" + strings.Join(tools, ", ") + "): make test runs it, -short (make check) does not")
	}
	for _, tool := range tools {
		if _, err := run.Output(context.Background(), run.Cmd{Argv: []string{tool, "--version"}}); err != nil {
			t.Fatalf("%s is needed for this test (`make preflight` names everything the tests need and the apt-get line that installs it): %v", tool, err)
		}
	}
}

// gitTree turns tree into a git repository with one commit and returns its HEAD.
func gitTree(t *testing.T, tree string) string {
	t.Helper()
	ctx := context.Background()
	g := &gitcli.Git{Env: gitcli.DeterministicEnv(t.TempDir())}
	if _, err := run.Run(ctx, run.Cmd{Argv: []string{"git", "init", "-q"}, Dir: tree, Env: g.Env}); err != nil {
		t.Fatal(err)
	}
	head, err := g.Commit(ctx, tree, "fixture\n", gitcli.CommitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return head
}

// writeWheel writes a minimal wheel of distribution name holding files, for offline
// pip installs (no index, no network).
func writeWheel(t *testing.T, dir, name, version string, files map[string]string) string {
	t.Helper()
	path := filepath.Join(dir, fmt.Sprintf("%s-%s-py3-none-any.whl", strings.ReplaceAll(name, "-", "_"), version))
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	info := strings.ReplaceAll(name, "-", "_") + "-" + version + ".dist-info/"
	all := map[string]string{
		info + "METADATA": fmt.Sprintf("Metadata-Version: 2.1\nName: %s\nVersion: %s\n", name, version),
		info + "WHEEL":    "Wheel-Version: 1.0\nGenerator: mpspatch-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
	}
	for k, v := range files {
		all[k] = v
	}
	var record strings.Builder
	for _, k := range slices.Sorted(mapsKeys(all)) {
		w, err := zw.Create(k)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(all[k]))
		record.WriteString(k + ",,\n")
	}
	record.WriteString(info + "RECORD,,\n")
	w, _ := zw.Create(info + "RECORD")
	w.Write([]byte(record.String()))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return path
}

func mapsKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// ninjaSteps returns the "[done/total] ..." lines of one build's compile events.
func ninjaSteps(events []Event) []string {
	var out []string
	for _, e := range events {
		if e.Phase == PhaseCompile {
			out = append(out, e.Line)
		}
	}
	return out
}

// TestBuildRealIncremental: built for real, rebuilt as a no-op (pip not started), rebuilt
// after a patch touches one source file (only that unit recompiles), broken source
// reported as file:line, and a second torch installed in the venv caught by the check.
func TestBuildRealIncremental(t *testing.T) {
	t.Parallel() // each has its own venv, trees and caches
	needTools(t, "cmake", "ninja", "cc", "git")
	ctx := context.Background()
	python, env := realVenv(t)
	tree := copyTree(t)
	head := gitTree(t, tree)
	opts := Options{Tree: tree, Python: python, BaseEnv: env, GOOS: "linux", Cache: CacheOptions{Tool: "none"},
		SeriesHash: "s1", Patches: []PatchRef{{Name: "0001-k3.patch", SHA256: "v1"}}}

	rec := &recorder{}
	opts.Reporter = rec
	res, err := Build(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if steps := ninjaSteps(rec.all()); len(steps) == 0 || !strings.HasPrefix(steps[len(steps)-1], "[9/9]") {
		t.Fatalf("first build ninja steps %q, want 9", steps)
	}
	if !InTree(tree, res.Torch.File) || res.Torch.GitVersion != head {
		t.Errorf("torch check %+v, want torch from %s at %s", res.Torch, tree, head)
	}

	// No-op: pip is not started, so no log is written and no progress comes.
	logsBefore, _ := os.ReadDir(filepath.Join(tree, ".mpspatch", "logs"))
	rec2 := &recorder{}
	opts.Reporter = rec2
	res, err = Build(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	logsAfter, _ := os.ReadDir(filepath.Join(tree, ".mpspatch", "logs"))
	if !res.UpToDate || len(logsAfter) != len(logsBefore) || len(rec2.all()) != 0 {
		t.Errorf("no-op: up to date %v, logs %d -> %d, %d events; want up to date, no build", res.UpToDate, len(logsBefore), len(logsAfter), len(rec2.all()))
	}

	// A new version of the patch changes src/k3.c: only k3.c recompiles, then the
	// library and the program relink.
	k3 := filepath.Join(tree, "src", "k3.c")
	if err := os.WriteFile(k3, []byte("int k3(int x) { return x * 3; }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	opts.Patches = []PatchRef{{Name: "0001-k3.patch", SHA256: "v2"}}
	rec3 := &recorder{}
	opts.Reporter = rec3
	res, err = Build(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	steps := ninjaSteps(rec3.all())
	if !slices.Equal(res.Changes, []string{"patch 0001-k3.patch changed"}) || len(steps) != 3 ||
		!strings.Contains(steps[0], "k3.c.o") || !strings.HasPrefix(steps[2], "[3/3]") {
		t.Errorf("rebuild: changes %q, ninja steps %q; want the patch named and 3 steps, k3.c.o first", res.Changes, steps)
	}

	// A broken source is reported as file:line.
	if err := os.WriteFile(k3, []byte("int k3(int x) { return x * ; }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	opts.Patches = []PatchRef{{Name: "0001-k3.patch", SHA256: "v3"}}
	opts.Reporter = nil
	_, err = Build(ctx, opts)
	var be *BuildError
	if !errors.As(err, &be) || len(be.FirstErrors) == 0 || !strings.HasPrefix(be.FirstErrors[0], k3+":1:") {
		t.Fatalf("broken source: error %v, want *BuildError quoting %s:1:...", err, k3)
	}
	if err := os.WriteFile(k3, []byte("int k3(int x) { return x * 3; }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	opts.Patches = []PatchRef{{Name: "0001-k3.patch", SHA256: "v2"}}
	// The failed build left the stamp of v2 in place, but pip uninstalled the build
	// before it failed: the unfinished build is noticed and v2 is built again.
	res, err = Build(ctx, opts)
	if err != nil || res.UpToDate || len(res.Changes) != 1 || !strings.Contains(res.Changes[0], "the last build did not finish") {
		t.Fatalf("after the failure, back to v2: %+v, %v; want a rebuild because the last one failed", res, err)
	}

	// A second torch installed into the venv shadows the editable build.
	whl := writeWheel(t, t.TempDir(), "shadow-torch", "1.0", map[string]string{"torch/__init__.py": "git_version = 'shadow'\n"})
	if _, err := run.Output(ctx, run.Cmd{Argv: []string{python, "-m", "pip", "install", "-q", whl}, Env: env}); err != nil {
		t.Fatal(err)
	}
	_, err = Build(ctx, opts)
	var se *ShadowError
	if !errors.As(err, &se) {
		t.Fatalf("with a shadowing install: error %v, want *ShadowError", err)
	}
	for _, want := range []string{"site-packages/torch, not from the tree", "pip uninstall -y shadow-torch"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("shadow error %q lacks %q", err, want)
		}
	}
	if _, err := run.Output(ctx, run.Cmd{Argv: []string{python, "-m", "pip", "uninstall", "-y", "-q", "shadow-torch"}, Env: env}); err != nil {
		t.Fatal(err)
	}
	if res, err = Build(ctx, opts); err != nil || !res.UpToDate {
		t.Errorf("after removing the shadow: up to date %v, %v", res != nil && res.UpToDate, err)
	}

	// A stale build: HEAD moved on (a commit) but torch/version.py still says the old one.
	g := &gitcli.Git{Env: gitcli.DeterministicEnv(t.TempDir())}
	os.WriteFile(filepath.Join(tree, "NOTE"), []byte("x\n"), 0o644)
	newHead, err := g.Commit(ctx, tree, "note\n", gitcli.CommitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := checkTorch(ctx, python, tree, newHead, env); !errors.As(err, &se) || !strings.Contains(err.Error(), "stale build") {
		t.Errorf("stale build: %v, want a *ShadowError saying stale", err)
	}
}

// TestBuildRealSharedCache proves the shared compiler cache for real: ccache with its
// remote storage on a redis-server started here on loopback (password from the
// environment). A first build fills Redis; a second checkout at another path with an
// empty local cache gets every object from Redis.
func TestBuildRealSharedCache(t *testing.T) {
	t.Parallel() // each has its own venv, trees and caches
	needTools(t, "cmake", "ninja", "cc", "ccache", "redis-server")
	ctx := context.Background()
	python, env := realVenv(t)
	const password = "mpspatch-test-pw"
	port := startRedis(t, password)
	env = append(env, "MPSPATCH_TEST_REDIS_PW="+password)
	local := filepath.Join(t.TempDir(), "ccache-local")
	cache := CacheOptions{Tool: "ccache", Remote: fmt.Sprintf("redis://127.0.0.1:%d", port), PasswordEnv: "MPSPATCH_TEST_REDIS_PW", Dir: local}

	first := copyTree(t)
	res, err := Build(ctx, Options{Tree: first, Python: python, BaseEnv: env, GOOS: "linux", Cache: cache})
	if err != nil {
		t.Fatal(err)
	}
	// 6 kernels + main, and CMake's compiler checks, which go through the launcher too.
	cold := res.Cache
	if cold == nil || cold.Misses < 7 || cold.Hits != 0 {
		t.Fatalf("cold build cache stats %+v, want at least 7 misses, no hits", cold)
	}

	if err := os.RemoveAll(local); err != nil {
		t.Fatal(err)
	}
	second := copyTree(t)
	res, err = Build(ctx, Options{Tree: second, Python: python, BaseEnv: env, GOOS: "linux", Cache: cache})
	if err != nil {
		t.Fatal(err)
	}
	if c := res.Cache; c == nil || c.Hits != cold.Misses || c.RemoteHits != cold.Misses || c.Misses != 0 || c.HitRate != 100 {
		t.Errorf("clean rebuild with the local cache wiped: stats %+v, want all %d from remote storage", c, cold.Misses)
	}
	stamp, _ := os.ReadFile(filepath.Join(second, ProvenanceFile))
	log, _ := os.ReadFile(res.LogPath)
	for name, data := range map[string][]byte{"stamp": stamp, "log": log} {
		if strings.Contains(string(data), password) {
			t.Errorf("the %s holds the redis password", name)
		}
	}
	if p, err := ReadProvenance(second); err != nil || p.Cache == nil || p.Cache.RemoteHits != cold.Misses {
		t.Errorf("stamp cache %+v (%v), want the remote hits recorded", p.Cache, err)
	}
}

// startRedis starts redis-server on a free loopback port in its own directory, with a
// password, and stops it when the test ends.
func startRedis(t testing.TB, password string) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	p, err := run.Start(ctx, run.Cmd{
		Argv: []string{"redis-server", "--port", fmt.Sprint(port), "--bind", "127.0.0.1", "--dir", dir,
			"--save", "", "--appendonly", "no", "--requirepass", password},
		LogPath: filepath.Join(dir, "redis.log"),
	})
	if err != nil {
		cancel()
		t.Fatalf("start redis-server: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		p.Wait()
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err == nil {
			c.Close()
			return port
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "redis.log"))
			t.Fatalf("redis-server did not listen on %d: %v\n%s", port, err, log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
