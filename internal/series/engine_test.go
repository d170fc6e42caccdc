package series

import (
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/")

func streamFile() string {
	return lines(200, func(i int) string {
		switch i {
		case 40:
			return "MPSStream* getDefaultMPSStream() {"
		case 120:
			return "void MPSStream::synchronize(SyncType syncType) {"
		}
		return "  line " + strings.Repeat("x", i%7) + " " + string(rune('a'+i%26))
	})
}

var mpsBase = map[string]string{
	"aten/mps/Stream.mm": streamFile(),
	"aten/mps/Cache.h":   lines(30, func(i int) string { return "cache line " + string(rune('A'+i%26)) }),
	"tools/run.sh":       "#!/bin/sh\necho run\n",
	"old/name.txt":       lines(12, func(i int) string { return "name " + string(rune('a'+i)) }),
	"gone.txt":           "to be removed\n",
	"crlf.txt":           "one\r\ntwo\r\nthree\r\nfour\r\nfive\r\n",
}

func mpsSteps() []genStep {
	return []genStep{
		{"stream-pool", "Add a stream pool\n\nIntent: present \"streamPool\" in aten/mps/Stream.mm", func(t testing.TB, d string) {
			replaceIn(t, d, "aten/mps/Stream.mm", "MPSStream* getDefaultMPSStream() {\n", "MPSStream* getDefaultMPSStream() {\n  auto& streamPool = pool();\n")
			replaceIn(t, d, "aten/mps/Stream.mm", "void MPSStream::synchronize(SyncType syncType) {\n", "void MPSStream::synchronize(SyncType syncType) {\n  std::lock_guard<std::recursive_mutex> lock(_streamMutex);\n")
		}},
		{"cache", "Thread-local cache", func(t testing.TB, d string) {
			replaceIn(t, d, "aten/mps/Cache.h", "cache line K\n", "thread_local cache line K\n")
			writeFiles(t, d, map[string]string{"aten/mps/Pool.h": "#pragma once\nstruct Pool {};\n"})
		}},
		{"misc", "Rename, delete, chmod", func(t testing.TB, d string) {
			if err := os.Chmod(filepath.Join(d, "tools/run.sh"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(filepath.Join(d, "renamed"), 0o755); err != nil {
				t.Fatal(err)
			}
			git(t, d, "mv", "old/name.txt", "renamed/name.txt")
			replaceIn(t, d, "renamed/name.txt", "name c\n", "name C\n")
			git(t, d, "rm", "-q", "gone.txt")
		}},
		{"stream-again", "Touch the stream twice", func(t testing.TB, d string) {
			replaceIn(t, d, "aten/mps/Stream.mm", "  auto& streamPool = pool();\n", "  auto& streamPool = MPSStreamPool::instance();\n")
		}},
		{"crlf", "CRLF file", func(t testing.TB, d string) {
			replaceIn(t, d, "crlf.txt", "three\r\n", "THREE\r\n")
		}},
	}
}

// patchedSnapshot is the tree at the tip of the fixture's branch, as git checks it out.
func patchedSnapshot(t *testing.T, fx fixture) map[string]string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "tip")
	git(t, filepath.Dir(dir), "clone", "-q", fx.repo, dir)
	git(t, dir, "checkout", "-q", "main")
	return snapshot(t, dir)
}

func TestApplyUnapplyRoundTrip(t *testing.T) {
	fx := newFixture(t, mpsBase, mpsSteps()...)
	s := mustLoad(t, fx.patches)
	root := openRoot(t, fx.repo)
	before := snapshot(t, fx.repo)
	want := patchedSnapshot(t, fx)

	res, err := Apply(root, s, Options{})
	if err != nil {
		t.Fatalf("apply: %v", err)
	}
	if res.Noop {
		t.Fatal("apply on the base reported a no-op")
	}
	if have := snapshot(t, fx.repo); !reflect.DeepEqual(have, want) {
		t.Errorf("after apply the tree differs from git's checkout of the tip:\n%s", mapDiff(have, want))
	}
	st, err := Inspect(root, s)
	if err != nil {
		t.Fatal(err)
	}
	if have := st.Summary(); have != Applied {
		t.Errorf("status after apply: have %s, want %s", have, Applied)
	}

	again, err := Apply(root, s, Options{})
	if err != nil || !again.Noop {
		t.Errorf("second apply: have noop=%v err=%v, want a no-op", again != nil && again.Noop, err)
	}

	if _, err := Unapply(root, s, Options{}); err != nil {
		t.Fatalf("unapply: %v", err)
	}
	if have := snapshot(t, fx.repo); !reflect.DeepEqual(have, before) {
		t.Errorf("after unapply the tree differs from the base:\n%s", mapDiff(have, before))
	}
	if _, err := os.Stat(filepath.Join(fx.repo, StateDir)); !os.IsNotExist(err) {
		t.Errorf("%s left behind after a clean run (stat: %v)", StateDir, err)
	}
	un, err := Unapply(root, s, Options{})
	if err != nil || !un.Noop {
		t.Errorf("second unapply: have noop=%v err=%v, want a no-op", un != nil && un.Noop, err)
	}
}

func TestApplyAtOffsetMatchesGitApply(t *testing.T) {
	fx := newFixture(t, mpsBase, mpsSteps()...)
	s := mustLoad(t, fx.patches)
	// Shift everything in Stream.mm down by 7 lines and Cache.h up by 2.
	replaceIn(t, fx.repo, "aten/mps/Stream.mm", "  line ", lines(7, func(int) string { return "// inserted upstream" })+"  line ")
	replaceIn(t, fx.repo, "aten/mps/Cache.h", "cache line B\ncache line C\n", "")

	gitTree := filepath.Join(t.TempDir(), "gitapply")
	copyTree(t, fx.repo, gitTree)
	for _, p := range s.Patches {
		cmd := exec.Command("git", "apply", filepath.Join(fx.patches, p.Name))
		cmd.Dir = gitTree
		cmd.Env = gitEnv(gitTree)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git apply %s: %v\n%s", p.Name, err, out)
		}
	}

	root := openRoot(t, fx.repo)
	res, err := Apply(root, s, Options{IgnoreBase: true})
	if err != nil {
		t.Fatalf("apply: %v", err)
	}
	if have, want := snapshot(t, fx.repo), snapshot(t, gitTree); !reflect.DeepEqual(have, want) {
		t.Errorf("mpspatch and git apply disagree:\n%s", mapDiff(have, want))
	}
	if have, want := res.Plan.Results[0].Outcome(), "offset"; have != want {
		t.Errorf("0001 outcome: have %s, want %s", have, want)
	}
	if have, want := res.Plan.Results[0].MaxOffset(), 7; have != want {
		t.Errorf("0001 max offset: have %d, want %d", have, want)
	}
	if have, want := res.Plan.Results[1].Hunks[0].Offset, -2; have != want {
		t.Errorf("0002 Cache.h offset: have %d, want %d", have, want)
	}
}

func TestEditedTreeIsRefusedUnlessIgnoreBase(t *testing.T) {
	fx := newFixture(t, mpsBase, mpsSteps()...)
	s := mustLoad(t, fx.patches)
	replaceIn(t, fx.repo, "aten/mps/Cache.h", "cache line T\n", "cache line T // my edit\n")
	before := snapshot(t, fx.repo)
	root := openRoot(t, fx.repo)

	_, err := Apply(root, s, Options{})
	var se *StateError
	if !errors.As(err, &se) {
		t.Fatalf("have %v, want a *StateError", err)
	}
	if !strings.Contains(err.Error(), "aten/mps/Cache.h") || !strings.Contains(err.Error(), "with local edits") {
		t.Errorf("error does not name the edited file and its state:\n%v", err)
	}
	if have := snapshot(t, fx.repo); !reflect.DeepEqual(have, before) {
		t.Fatalf("a refused apply wrote:\n%s", mapDiff(have, before))
	}
	if _, err := Apply(root, s, Options{IgnoreBase: true}); err != nil {
		t.Fatalf("apply --ignore-base: %v", err)
	}
	data, _ := os.ReadFile(filepath.Join(fx.repo, "aten/mps/Cache.h"))
	if !strings.Contains(string(data), "// my edit") || !strings.Contains(string(data), "thread_local") {
		t.Errorf("--ignore-base lost the edit or the patch:\n%s", data)
	}
}

func TestPartialTreeIsRefused(t *testing.T) {
	fx := newFixture(t, mpsBase, mpsSteps()...)
	s := mustLoad(t, fx.patches)
	// Patch only Cache.h by hand (half of 0002).
	replaceIn(t, fx.repo, "aten/mps/Cache.h", "cache line K\n", "thread_local cache line K\n")
	before := snapshot(t, fx.repo)
	root := openRoot(t, fx.repo)
	_, err := Apply(root, s, Options{})
	var se *StateError
	if !errors.As(err, &se) {
		t.Fatalf("have %v, want *StateError", err)
	}
	if have := se.Status.Summary(); have != Partial {
		t.Errorf("summary: have %s, want %s", have, Partial)
	}
	states := map[string]PatchState{}
	for _, p := range se.Status.Patches {
		states[p.Name] = p.State
	}
	if states["0002-cache.patch"] != Partial || states["0001-stream-pool.patch"] != NotApplied {
		t.Errorf("patch states: have %v", states)
	}
	for _, want := range []string{"aten/mps/Cache.h", "patched", "aten/mps/Pool.h", "base"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if have := snapshot(t, fx.repo); !reflect.DeepEqual(have, before) {
		t.Fatalf("a refused apply wrote:\n%s", mapDiff(have, before))
	}
}

func TestConflictWritesNothingAndReports(t *testing.T) {
	fx := newFixture(t, mpsBase, mpsSteps()...)
	s := mustLoad(t, fx.patches)
	replaceIn(t, fx.repo, "aten/mps/Stream.mm", "void MPSStream::synchronize(SyncType syncType) {\n", "void MPSStream::synchronize(SyncType type) {\n")
	before := snapshot(t, fx.repo)
	root := openRoot(t, fx.repo)

	res, err := Apply(root, s, Options{IgnoreBase: true})
	var ce *ConflictError
	if !errors.As(err, &ce) {
		t.Fatalf("have %v, want *ConflictError", err)
	}
	if have := snapshot(t, fx.repo); !reflect.DeepEqual(have, before) {
		t.Fatalf("a conflicting apply wrote:\n%s", mapDiff(have, before))
	}
	if _, err := os.Stat(filepath.Join(fx.repo, StateDir)); !os.IsNotExist(err) {
		t.Errorf("%s created by a conflicting apply", StateDir)
	}
	c := ce.Conflicts[0]
	if c.Patch != "0001-stream-pool.patch" || c.File != "aten/mps/Stream.mm" || c.Hunk != 2 || c.Hunks != 2 {
		t.Errorf("conflict names %s %s hunk %d/%d", c.Patch, c.File, c.Hunk, c.Hunks)
	}
	if want := "apply 0001-stream-pool.patch: aten/mps/Stream.mm hunk 2/2: context mismatch at line 118"; err.Error() != want {
		t.Errorf("message:\nhave %s\nwant %s", err.Error(), want)
	}
	if res.Plan == nil || res.Plan.Results[0].Outcome() != "conflict" {
		t.Errorf("plan does not mark 0001 as conflict")
	}
	golden(t, "conflict-report.golden", c.Report())
}

func TestSymlinkInTreeIsRefused(t *testing.T) {
	fx := newFixture(t, mpsBase, mpsSteps()...)
	s := mustLoad(t, fx.patches)
	// Replace aten/mps with a link to a copy elsewhere in the tree.
	if err := os.Rename(filepath.Join(fx.repo, "aten/mps"), filepath.Join(fx.repo, "real-mps")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../real-mps", filepath.Join(fx.repo, "aten/mps")); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, fx.repo)
	root := openRoot(t, fx.repo)
	_, err := Apply(root, s, Options{IgnoreBase: true})
	if err == nil || !strings.Contains(err.Error(), "aten/mps is a symbolic link") {
		t.Fatalf("have %v, want a refusal naming the link", err)
	}
	if have := snapshot(t, fx.repo); !reflect.DeepEqual(have, before) {
		t.Fatalf("wrote through a symlink:\n%s", mapDiff(have, before))
	}
}

func TestDryRunWritesNothing(t *testing.T) {
	fx := newFixture(t, mpsBase, mpsSteps()...)
	s := mustLoad(t, fx.patches)
	before := snapshot(t, fx.repo)
	res, err := Apply(openRoot(t, fx.repo), s, Options{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Plan.Changes) != 8 {
		t.Errorf("dry run plans %d changes, want 8", len(res.Plan.Changes))
	}
	if have := snapshot(t, fx.repo); !reflect.DeepEqual(have, before) {
		t.Fatalf("dry run wrote:\n%s", mapDiff(have, before))
	}
}

func TestWorksWithoutGit(t *testing.T) {
	fx := newFixture(t, mpsBase, mpsSteps()...)
	s := mustLoad(t, fx.patches)
	if err := os.RemoveAll(filepath.Join(fx.repo, ".git")); err != nil {
		t.Fatal(err)
	}
	if _, err := Apply(openRoot(t, fx.repo), s, Options{}); err != nil {
		t.Fatalf("apply on a tree without .git: %v", err)
	}
}

func golden(t *testing.T, name, have string) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(have), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if have != string(want) {
		t.Errorf("%s differs (run with -update if the change is intended):\nhave:\n%s\nwant:\n%s", p, have, want)
	}
}

func copyTree(t testing.TB, src, dst string) {
	t.Helper()
	err := filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if fi.IsDir() {
			if fi.Name() == ".git" {
				return filepath.SkipDir
			}
			return os.MkdirAll(target, fi.Mode().Perm())
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, fi.Mode().Perm())
	})
	if err != nil {
		t.Fatal(err)
	}
}

func mapDiff(have, want map[string]string) string {
	var b strings.Builder
	for k, v := range have {
		if w, ok := want[k]; !ok {
			b.WriteString("  extra " + k + "\n")
		} else if w != v {
			b.WriteString("  differs " + k + "\n")
		}
	}
	for k := range want {
		if _, ok := have[k]; !ok {
			b.WriteString("  missing " + k + "\n")
		}
	}
	return b.String()
}

func TestBeforeCommitCanStopTheWrite(t *testing.T) {
	fx := newFixture(t, mpsBase, mpsSteps()...)
	s := mustLoad(t, fx.patches)
	before := snapshot(t, fx.repo)
	stop := errors.New("intent does not hold")
	var seen *Plan
	_, err := Apply(openRoot(t, fx.repo), s, Options{BeforeCommit: func(p *Plan) error { seen = p; return stop }})
	if !errors.Is(err, stop) {
		t.Fatalf("have %v, want the hook's error", err)
	}
	if seen == nil || len(seen.Changes) != 8 {
		t.Fatalf("hook did not see the full plan: %+v", seen)
	}
	if have := snapshot(t, fx.repo); !reflect.DeepEqual(have, before) {
		t.Fatalf("a stopped apply wrote:\n%s", mapDiff(have, before))
	}
}
