package builder

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// steps names each start of a fake tool: "python -c <probe>", "python build",
// "python -c <torch check>", "ccache --print-stats".
func stepNames(steps []transcript) []string {
	var out []string
	for _, s := range steps {
		switch {
		case s.Argv[0] == "ccache":
			out = append(out, strings.Join(s.Argv, " "))
		case len(s.Argv) > 2 && s.Argv[1] == "-c" && strings.Contains(s.Argv[2], "import torch"):
			out = append(out, "python torch-check")
		case len(s.Argv) > 1 && s.Argv[1] == "-c":
			out = append(out, "python probe")
		default:
			out = append(out, "python build")
		}
	}
	return out
}

func TestBuildUpToDate(t *testing.T) {
	ctx := context.Background()
	tree := copyTree(t)
	opts, transcriptPath := fakeOptions(t, tree, "ok")
	res, err := Build(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.UpToDate || !slices.Equal(res.Changes, []string{"no build stamp (first build)"}) {
		t.Fatalf("first build: up to date %v, changes %q", res.UpToDate, res.Changes)
	}

	// Nothing changed: no build starts, only the probe and the torch check run.
	os.Remove(transcriptPath)
	logs, _ := os.ReadDir(filepath.Join(tree, ".mpspatch", "logs"))
	res, err = Build(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !res.UpToDate || len(res.Changes) != 0 {
		t.Errorf("second build: up to date %v, changes %q; want up to date", res.UpToDate, res.Changes)
	}
	if got := stepNames(readSteps(t, transcriptPath)); !slices.Equal(got, []string{"python probe", "python torch-check"}) {
		t.Errorf("an up-to-date build started %q, want only the probe and the torch check", got)
	}
	if after, _ := os.ReadDir(filepath.Join(tree, ".mpspatch", "logs")); len(after) != len(logs) {
		t.Errorf("an up-to-date build wrote a log (%d logs, had %d)", len(after), len(logs))
	}

	// Each kind of change is named, and builds.
	tests := []struct {
		name string
		edit func(o *Options)
		want []string
	}{
		{"patch changed", func(o *Options) { o.Patches[1].SHA256 = "cc" }, []string{"patch 0002-b.patch changed"}},
		{"patch added", func(o *Options) { o.Patches = append(o.Patches, PatchRef{"0003-c.patch", "dd"}) }, []string{"patch 0003-c.patch added"}},
		{"env", func(o *Options) { o.Env = map[string]string{"USE_CUDA": "0"} }, []string{"env USE_CUDA=0 set"}},
		{"inherited build variable", func(o *Options) { o.BaseEnv = append(slices.Clone(o.BaseEnv), "BUILD_TEST=0") }, []string{"env BUILD_TEST=0 set"}},
		{"jobs alone is no change", func(o *Options) { o.Jobs = 7 }, nil},
		{"force", func(o *Options) { o.Force = true }, []string{"--force"}},
	}
	for _, tt := range tests {
		o := opts
		o.Patches = slices.Clone(opts.Patches)
		tt.edit(&o)
		res, err := Build(ctx, o)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if !slices.Equal(res.Changes, tt.want) || res.UpToDate != (tt.want == nil) {
			t.Errorf("%s: changes %q (up to date %v), want %q", tt.name, res.Changes, res.UpToDate, tt.want)
		}
		// Put the stamp back to the original inputs for the next case.
		if _, err := Build(ctx, opts); err != nil {
			t.Fatal(err)
		}
	}
}

// TestBuildLauncherTranscript checks every step of a build with a (fake) ccache in PATH
// and shared storage configured: argv, directory and environment.
func TestBuildLauncherTranscript(t *testing.T) {
	ctx := context.Background()
	tree := copyTree(t)
	bin := t.TempDir()
	exe, _ := os.Executable()
	ccache := filepath.Join(bin, "ccache")
	if err := os.Symlink(exe, ccache); err != nil {
		t.Fatal(err)
	}
	cacheDir := filepath.Join(t.TempDir(), "ccache")
	opts, transcriptPath := fakeOptions(t, tree, "ok", "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"), "MPSPATCH_TEST_CACHE_PW=s3cret-pw")
	opts.Cache = CacheOptions{Tool: "auto", Remote: "redis://builder@cache.example:6379", PasswordEnv: "MPSPATCH_TEST_CACHE_PW", Dir: cacheDir}
	res, err := Build(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	steps := readSteps(t, transcriptPath)
	want := []string{"python probe", "ccache --version", "ccache --print-stats", "python build", "ccache --print-stats", "python torch-check"}
	if got := stepNames(steps); !slices.Equal(got, want) {
		t.Fatalf("steps %q, want %q", got, want)
	}
	build := steps[3]
	if build.Dir != tree {
		t.Errorf("build ran in %s, want %s", build.Dir, tree)
	}
	for k, v := range map[string]string{
		"CMAKE_C_COMPILER_LAUNCHER": ccache, "CMAKE_CXX_COMPILER_LAUNCHER": ccache,
		"CMAKE_OBJC_COMPILER_LAUNCHER": ccache, "CMAKE_OBJCXX_COMPILER_LAUNCHER": ccache,
		"CCACHE_BASEDIR": tree, "CCACHE_DIR": cacheDir,
		"CCACHE_REMOTE_STORAGE": "redis://builder:s3cret-pw@cache.example:6379", "USE_MPS": "1",
	} {
		if build.Env[k] != v {
			t.Errorf("build env %s = %q, want %q", k, build.Env[k], v)
		}
	}
	// The statistics are read with the build's cache settings.
	for _, i := range []int{2, 4} {
		if steps[i].Env["CCACHE_DIR"] != cacheDir || steps[i].Env["CCACHE_REMOTE_STORAGE"] == "" {
			t.Errorf("step %d (%q) env lacks the cache settings", i, steps[i].Argv)
		}
	}
	// The torch check runs outside the tree.
	if InTree(tree, steps[5].Dir) {
		t.Errorf("torch check ran in %s, inside the tree", steps[5].Dir)
	}
	c := res.Cache
	if c == nil || c.Hits != 3 || c.Misses != 1 || c.RemoteHits != 2 || c.HitRate != 75 || c.Remote != "redis://builder@cache.example:6379" {
		t.Errorf("cache stats %+v, want 3 hits, 1 miss, 2 remote, 75%%, the remote without the password", c)
	}
	stamp, err := os.ReadFile(filepath.Join(tree, ProvenanceFile))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(stamp), "s3cret-pw") {
		t.Errorf("the stamp holds the password:\n%s", stamp)
	}
	if p, _ := ReadProvenance(tree); p.Cache == nil || p.Cache.Hits != 3 || !strings.Contains(p.Inputs.Launcher, "ccache version 4.7.5-fake") {
		t.Errorf("stamp cache %+v, launcher %q", p.Cache, p.Inputs.Launcher)
	}
	if strings.Contains(res.Cache.String(), "s3cret") || !strings.Contains(res.Cache.String(), "3/4 hits (75%), 2 from redis://builder@cache.example:6379") {
		t.Errorf("cache summary %q", res.Cache.String())
	}

	t.Run("missing password", func(t *testing.T) {
		o := opts
		o.BaseEnv = slices.DeleteFunc(slices.Clone(opts.BaseEnv), func(kv string) bool { return strings.HasPrefix(kv, "MPSPATCH_TEST_CACHE_PW=") })
		_, err := Build(ctx, o)
		var ee *EnvError
		if !errors.As(err, &ee) || !strings.Contains(err.Error(), "MPSPATCH_TEST_CACHE_PW") {
			t.Errorf("error = %v, want an *EnvError naming the variable", err)
		}
	})
	t.Run("named tool missing", func(t *testing.T) {
		o := opts
		o.Cache = CacheOptions{Tool: "sccache"}
		o.BaseEnv = append(slices.Clone(opts.BaseEnv), "PATH="+t.TempDir())
		_, err := Build(ctx, o)
		var ee *EnvError
		if !errors.As(err, &ee) || !strings.Contains(err.Error(), "sccache not found") {
			t.Errorf("error = %v, want sccache not found", err)
		}
	})
}

func TestBuildTorchCheckFake(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name  string
		env   []string
		wants []string
	}{
		{"shadowed by a wheel", []string{"FAKE_TORCH_FILE=/venv/lib/python3.11/site-packages/torch/__init__.py", "FAKE_TORCH_OWNER=torch"},
			[]string{"imports torch from /venv/lib/python3.11/site-packages/torch, not from the tree", "-m pip uninstall -y torch"}},
		{"shadowed by a stray copy", []string{"FAKE_TORCH_FILE=/somewhere/torch/__init__.py"},
			[]string{"imports torch from /somewhere/torch", "rm -r /somewhere/torch"}},
		{"no torch at all", []string{"FAKE_TORCH_ERROR=ModuleNotFoundError: No module named 'torch'"},
			[]string{"cannot import torch", "No module named"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tree := copyTree(t)
			opts, _ := fakeOptions(t, tree, "ok", tt.env...)
			res, err := Build(ctx, opts)
			var se *ShadowError
			if !errors.As(err, &se) {
				t.Fatalf("error = %v, want *ShadowError", err)
			}
			for _, w := range tt.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			// The build itself succeeded and is stamped; the next run checks again.
			if res == nil || res.StampPath == "" {
				t.Fatalf("result %+v, want the stamp written", res)
			}
			res, err = Build(ctx, opts)
			if !errors.As(err, &se) || res == nil || !res.UpToDate {
				t.Errorf("second run: up to date %v, error %v; want the check to fail again without a build", res != nil && res.UpToDate, err)
			}
		})
	}
}
