package series

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/fstest"
	"time"

	"github.com/bluekeyes/go-gitdiff/gitdiff"
)

// handSeries writes a series of hand-made patches (diff sections only; the mail header
// is added) into a fresh directory and loads it.
func handSeries(t *testing.T, diffs ...string) (*Series, string) {
	t.Helper()
	dir := t.TempDir()
	var order []string
	for i, d := range diffs {
		name := fmt.Sprintf("%04d-step-%d.patch", i+1, i+1)
		order = append(order, name)
		mail := "From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n" +
			"From: Test Author <author@example.invalid>\nDate: Sun, 14 Dec 2025 12:00:00 +0000\n" +
			fmt.Sprintf("Subject: [PATCH] step %d\n\nBody.\n---\n", i+1) + d
		writeFiles(t, dir, map[string]string{name: mail})
	}
	writeFiles(t, dir, map[string]string{"series": strings.Join(order, "\n") + "\n"})
	return mustLoad(t, dir), dir
}

func newFileDiff(path, mode, content string) string {
	n := strings.Count(content, "\n")
	var b strings.Builder
	for _, l := range strings.SplitAfter(content, "\n") {
		if l != "" {
			b.WriteString("+" + l)
		}
	}
	return fmt.Sprintf("diff --git a/%s b/%s\nnew file mode %s\n--- /dev/null\n+++ b/%s\n@@ -0,0 +1,%d @@\n%s", path, path, mode, path, n, b.String())
}

func TestCheckPathRefusesWhatGitRefuses(t *testing.T) {
	for _, p := range []string{
		".git /hooks/x", ".git./hooks/x", ".git. . /x", "a/.GIT./config", "\u200c.git/hooks/x",
		".g\u200dit/config", ".git\ufeff/config", "GIT~1/config", ".git::$INDEX_ALLOCATION/x",
		".mpspatch/journal.json", "a/b/.mpspatch/journal.tmp", ".MpsPatch/x", ".mpspatch./x",
		"\u206a.mpspatch/x", "MPSPAT~1/journal.json",
	} {
		if err := CheckPath(p); err == nil {
			t.Errorf("CheckPath(%q) accepted a path git or mpspatch must refuse", p)
		}
	}
	for _, p := range []string{".gitignore", "a/.github/workflows/x.yml", "git/x", ".mpspatchrc", "a.git/x", ".gitx/y"} {
		if err := CheckPath(p); err != nil {
			t.Errorf("CheckPath(%q): %v; want it accepted", p, err)
		}
	}
}

func TestQuotePathAsGit(t *testing.T) {
	for in, want := range map[string]string{
		"aten/mps/Stream.mm":   "aten/mps/Stream.mm",
		"a\x1b[31mred":         `"a\033[31mred"`,
		"tab\there":            `"tab\there"`,
		`quo"te`:               `"quo\"te"`,
		"caf\u00e9":            `"caf\303\251"`,
		"\u202egnp.exe":        `"\342\200\256gnp.exe"`,
		"new\nline\\backslash": `"new\nline\\backslash"`,
	} {
		if have := QuotePath(in); have != want {
			t.Errorf("QuotePath(%q) = %s, want %s", in, have, want)
		}
	}
}

func TestModesAreNormalisedAsGitDoes(t *testing.T) {
	s, _ := handSeries(t,
		newFileDiff("world.sh", "100777", "x\n")+newFileDiff("shared.txt", "100666", "y\n")+
			newFileDiff("setuid.sh", "104755", "z\n")+newFileDiff("nomode.txt", "100000", "w\n"))
	dir := t.TempDir()
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	if _, err := Apply(openRoot(t, dir), s, Options{}); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]os.FileMode{"world.sh": 0o755, "shared.txt": 0o644, "setuid.sh": 0o755, "nomode.txt": 0o644} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if have := fi.Mode(); have != want {
			t.Errorf("%s: mode %v, want %v", name, have, want)
		}
	}
	// The umask applies, as with git: 077 leaves the owner alone.
	syscall.Umask(0o077)
	if _, err := Unapply(openRoot(t, dir), s, Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := Apply(openRoot(t, dir), s, Options{}); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(filepath.Join(dir, "world.sh")); fi.Mode() != 0o700 {
		t.Errorf("under umask 077: mode %v, want -rwx------", fi.Mode())
	}
}

func TestNetZeroSeriesIsJudgedInOrder(t *testing.T) {
	base := map[string]string{
		"a.txt": lines(20, func(i int) string { return fmt.Sprintf("a %d", i) }),
		"b.txt": lines(20, func(i int) string { return fmt.Sprintf("b %d", i) }),
	}
	fx := newFixture(t, base,
		genStep{"add", "Add a line and a file", func(t testing.TB, d string) {
			replaceIn(t, d, "a.txt", "a 10\n", "a 10\nadded\n")
			replaceIn(t, d, "b.txt", "b 5\n", "b five\n")
			writeFiles(t, d, map[string]string{"tmp.txt": "temporary\n"})
		}},
		genStep{"revert", "Revert the line, drop the file", func(t testing.TB, d string) {
			replaceIn(t, d, "a.txt", "a 10\nadded\n", "a 10\n")
			if err := os.Remove(filepath.Join(d, "tmp.txt")); err != nil {
				t.Fatal(err)
			}
		}},
	)
	s := mustLoad(t, fx.patches)
	root := openRoot(t, fx.repo)
	st, err := Inspect(root, s)
	if err != nil {
		t.Fatal(err)
	}
	if st.Summary() != NotApplied || st.Applied != 0 {
		t.Fatalf("clean base: summary %s (applied %d), want %s", st.Summary(), st.Applied, NotApplied)
	}
	for _, p := range st.Patches {
		if p.State != NotApplied {
			t.Errorf("clean base: %s is %s, want %s", p.Name, p.State, NotApplied)
		}
	}
	want := patchedSnapshot(t, fx)
	if _, err := Apply(root, s, Options{}); err != nil {
		t.Fatalf("apply a net-zero series to its base: %v", err)
	}
	if have := snapshot(t, fx.repo); !reflect.DeepEqual(have, want) {
		t.Errorf("after apply:\n%s", mapDiff(have, want))
	}
	if st, _ := Inspect(root, s); st.Summary() != Applied {
		t.Errorf("after apply: %s, want %s", st.Summary(), Applied)
	}
	// After the first patch alone, status names it, and only it, applied.
	if _, err := Unapply(root, s, Options{}); err != nil {
		t.Fatal(err)
	}
	first, err := ComputePatches(root, s.Patches[:1], Forward)
	if err != nil {
		t.Fatal(err)
	}
	if err := Commit(root, first, "apply", s.Hash(), CommitOptions{}); err != nil {
		t.Fatal(err)
	}
	st, _ = Inspect(root, s)
	if st.Applied != 1 || st.Patches[0].State != Applied || st.Patches[1].State != NotApplied {
		t.Errorf("after the first patch: applied %d, states %v", st.Applied, st.Patches)
	}
}

// gitApplyAll applies the series with `git apply` in a copy of dir and returns the copy.
func gitApplyAll(t *testing.T, dir, patches string, s *Series) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "gitapply")
	copyTree(t, dir, out)
	for _, p := range s.Patches {
		git(t, out, "apply", filepath.Join(patches, p.Name))
	}
	return out
}

func TestMixedEndingsAndMissingNewlineMatchGitApply(t *testing.T) {
	base := map[string]string{
		"mixed.txt":  "one\r\ntwo\nthree\r\nfour\nfive\r\nsix\n",
		"crlf.txt":   "a\r\nb\r\nc\r\nd\r\n",
		"nonl.txt":   "x\ny\nlast",
		"nonl2.txt":  "p\nq\nr",
		"gainnl.txt": "keep\nend",
	}
	fx := newFixture(t, base,
		genStep{"edit", "Edit around mixed endings", func(t testing.TB, d string) {
			replaceIn(t, d, "mixed.txt", "three\r\nfour\n", "three\r\nnew lf\nnew crlf\r\nfour\n")
			replaceIn(t, d, "crlf.txt", "b\r\n", "b\r\nadded lf\n")
			replaceIn(t, d, "nonl.txt", "last", "last\nmore")
			replaceIn(t, d, "nonl2.txt", "r", "R")
			replaceIn(t, d, "gainnl.txt", "end", "end\n")
		}},
	)
	s := mustLoad(t, fx.patches)
	before := snapshot(t, fx.repo)
	want := snapshot(t, gitApplyAll(t, fx.repo, fx.patches, s))
	if tip := patchedSnapshot(t, fx); !reflect.DeepEqual(want, tip) {
		t.Fatalf("git apply does not reproduce the commit; the fixture is wrong:\n%s", mapDiff(want, tip))
	}
	root := openRoot(t, fx.repo)
	if _, err := Apply(root, s, Options{}); err != nil {
		t.Fatal(err)
	}
	if have := snapshot(t, fx.repo); !reflect.DeepEqual(have, want) {
		t.Errorf("mpspatch and git apply disagree:\n%s", mapDiff(have, want))
	}
	st, _ := Inspect(root, s)
	if st.Summary() != Applied || len(st.Edited()) != 0 {
		t.Errorf("after apply: %s, edited %v", st.Summary(), st.Edited())
	}
	if _, err := Unapply(root, s, Options{}); err != nil {
		t.Fatal(err)
	}
	if have := snapshot(t, fx.repo); !reflect.DeepEqual(have, before) {
		t.Errorf("apply + unapply does not return the base:\n%s", mapDiff(have, before))
	}
}

func TestCollisionsArePlannedBeforeWriting(t *testing.T) {
	long := strings.Repeat("n", 256)
	for name, tc := range map[string]struct {
		diffs []string
		tree  map[string]string
		want  string
	}{
		"file and directory": {[]string{newFileDiff("x", "100644", "file\n"), newFileDiff("x/y", "100644", "in dir\n")}, nil, "to be a file and a directory at once"},
		"long name":          {[]string{newFileDiff("ok.txt", "100644", "ok\n") + newFileDiff("d/"+long, "100644", "long\n")}, nil, "longer than the 255 bytes"},
		"case fold":          {[]string{newFileDiff("Readme.md", "100644", "a\n"), newFileDiff("README.md", "100644", "b\n")}, nil, "case-insensitive"},
		"directory in tree":  {[]string{newFileDiff("ok.txt", "100644", "ok\n") + newFileDiff("sub", "100644", "b\n")}, map[string]string{"sub/keep.txt": "k\n"}, "not a regular file"},
		"file on the way":    {[]string{newFileDiff("ok.txt", "100644", "ok\n") + newFileDiff("f/new.txt", "100644", "b\n")}, map[string]string{"f": "file\n"}, "f is not a directory"},
	} {
		t.Run(name, func(t *testing.T) {
			s, _ := handSeries(t, tc.diffs...)
			dir := t.TempDir()
			writeFiles(t, dir, tc.tree)
			before := snapshot(t, dir)
			_, err := Apply(openRoot(t, dir), s, Options{DryRun: true})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("dry run: have %v, want an error containing %q", err, tc.want)
			}
			_, err = Apply(openRoot(t, dir), s, Options{})
			var ce *ConflictError
			var ue *UnsafePathError
			if !errors.As(err, &ce) && !errors.As(err, &ue) {
				t.Fatalf("have %v, want a conflict or unsafe path refusal", err)
			}
			if have := snapshot(t, dir); !reflect.DeepEqual(have, before) {
				t.Fatalf("wrote before refusing:\n%s", mapDiff(have, before))
			}
			if _, err := os.Stat(filepath.Join(dir, StateDir)); !os.IsNotExist(err) {
				t.Errorf("%s created", StateDir)
			}
		})
	}
}

func TestFailedWriteRollsBack(t *testing.T) {
	fx := newFixture(t, mpsBase, mpsSteps()...)
	s := mustLoad(t, fx.patches)
	before := snapshot(t, fx.repo)
	root := openRoot(t, fx.repo)
	writeFault = func(p string) error {
		if p == "aten/mps/Pool.h" {
			return syscall.ENOSPC
		}
		return nil
	}
	_, err := Apply(root, s, Options{})
	writeFault = nil
	if err == nil || !strings.Contains(err.Error(), "rolled back: the tree is as before") || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("have %v, want the write error and a rollback", err)
	}
	if have := snapshot(t, fx.repo); !reflect.DeepEqual(have, before) {
		t.Fatalf("after a failed write the tree is not the base:\n%s", mapDiff(have, before))
	}
	if Pending(root) {
		t.Error("journal left behind after a complete rollback")
	}
	if _, err := Apply(root, s, Options{}); err != nil {
		t.Errorf("apply after the rollback: %v", err)
	}
}

func TestRecoveryRollsBackWhenForwardCannotComplete(t *testing.T) {
	fx := newFixture(t, mpsBase, mpsSteps()...)
	s := mustLoad(t, fx.patches)
	before := snapshot(t, fx.repo)
	root := openRoot(t, fx.repo)
	// Commit the journal, then stop as a crash would, after the first target is written.
	crashApplyAt(t, root, s, "wrote aten/mps/Stream.mm")
	if !Pending(root) {
		t.Fatal("no journal after the simulated crash")
	}
	// Now the forward path cannot complete: a file it must write fails.
	writeFault = func(p string) error {
		if p == "aten/mps/Pool.h" {
			return syscall.EACCES
		}
		return nil
	}
	_, err := Recover(root, Forward)
	writeFault = nil
	if err == nil || !strings.Contains(err.Error(), "rolled back") {
		t.Fatalf("have %v, want a rollback", err)
	}
	if have := snapshot(t, fx.repo); !reflect.DeepEqual(have, before) {
		t.Fatalf("after rolling back the tree is not the base:\n%s", mapDiff(have, before))
	}
	if Pending(root) {
		t.Error("journal kept after a complete rollback: every later command would fail the same way")
	}
}

func TestReadOnlyCommandsReportInterruptedWrites(t *testing.T) {
	fx := newFixture(t, mpsBase, mpsSteps()...)
	s := mustLoad(t, fx.patches)
	root := openRoot(t, fx.repo)
	crashApplyAt(t, root, s, "wrote aten/mps/Stream.mm")
	crashed := snapshot(t, fx.repo)
	st, err := Inspect(root, s)
	if err != nil {
		t.Fatal(err)
	}
	if st.Summary() != Interrupted || st.Interrupted.Op != "apply" || st.Interrupted.Foreign {
		t.Fatalf("status: %s %+v, want an interrupted apply", st.Summary(), st.Interrupted)
	}
	if h := st.Interrupted.Hint(); !strings.Contains(h, "`mpspatch apply` finishes it") || !strings.Contains(h, "`mpspatch unapply` undoes it") {
		t.Errorf("hint does not name the commands: %s", h)
	}
	_, err = Apply(root, s, Options{DryRun: true})
	var je *JournalError
	if !errors.As(err, &je) {
		t.Errorf("dry run: have %v, want a *JournalError", err)
	}
	if have := snapshot(t, fx.repo); !reflect.DeepEqual(have, crashed) {
		t.Fatalf("a read-only command wrote:\n%s", mapDiff(have, crashed))
	}
	res, err := Unapply(root, s, Options{})
	if err != nil || res.Recovery != "rolled back" || !res.Noop {
		t.Fatalf("unapply of an interrupted apply: recovery %q noop %v err %v; want it rolled back", res.Recovery, res.Noop, err)
	}
}

func TestPlantedStateDirIsRefused(t *testing.T) {
	fx := newFixture(t, mpsBase, mpsSteps()...)
	s := mustLoad(t, fx.patches)
	if err := os.Symlink(".git/hooks", filepath.Join(fx.repo, StateDir)); err != nil {
		t.Fatal(err)
	}
	hooks := snapshot(t, filepath.Join(fx.repo, ".git"))
	before := snapshot(t, fx.repo)
	_, err := Apply(openRoot(t, fx.repo), s, Options{})
	var je *JournalError
	if !errors.As(err, &je) || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("have %v, want a refusal of the linked state directory", err)
	}
	if have := snapshot(t, fx.repo); !reflect.DeepEqual(have, before) {
		t.Fatalf("wrote:\n%s", mapDiff(have, before))
	}
	if have := snapshot(t, filepath.Join(fx.repo, ".git")); !reflect.DeepEqual(have, hooks) {
		t.Fatalf("wrote into .git:\n%s", mapDiff(have, hooks))
	}
}

func TestEmptySeriesIsRefusedAlike(t *testing.T) {
	s := &Series{Source: "empty"}
	root := openRoot(t, t.TempDir())
	for name, f := range map[string]func() error{
		"apply":   func() error { _, err := Apply(root, s, Options{}); return err },
		"unapply": func() error { _, err := Unapply(root, s, Options{}); return err },
		"status":  func() error { _, err := Inspect(root, s); return err },
	} {
		if err := f(); !errors.Is(err, ErrEmptySeries) {
			t.Errorf("%s: have %v, want ErrEmptySeries", name, err)
		}
	}
}

func TestSeriesInputIsBounded(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"0001-a.patch": goodMail})
	if err := syscall.Mkfifo(filepath.Join(dir, "series"), 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := Load(os.DirFS(dir), ".", dir); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("FIFO series: have %v, want a refusal", err)
		}
	case <-time.After(10 * time.Second):
		// Unblock the reader so the test binary can end, then fail.
		if f, err := os.OpenFile(filepath.Join(dir, "series"), os.O_WRONLY, 0); err == nil {
			f.Close()
		}
		t.Fatal("Load blocked on a FIFO")
	}
	zero := t.TempDir()
	writeFiles(t, zero, map[string]string{"0001-a.patch": goodMail})
	if err := os.Symlink("/dev/zero", filepath.Join(zero, "series")); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(os.DirFS(zero), ".", zero); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("series linked to /dev/zero: have %v, want a refusal", err)
	}
	big := fstest.MapFS{"series": {Data: []byte(strings.Repeat("x", MaxOrderSize+1))}}
	if _, err := Load(big, ".", "big"); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("oversized series: have %v", err)
	}
	// A file that is not a series is not echoed back whole.
	junk := fstest.MapFS{"series": {Data: []byte(strings.Repeat("root:x:0:0:root:/root:/bin/bash\n", 500))}}
	_, err := Load(junk, ".", "junk")
	if err == nil || strings.Count(err.Error(), "\n") > maxProblems+2 {
		t.Errorf("junk series: %d lines of problems, want at most %d", strings.Count(fmt.Sprint(err), "\n"), maxProblems+2)
	}
}

// TestApplyAndStatusRace runs status against a tree that another goroutine applies and
// unapplies over and over: status must see the tree wholly before or wholly after, never
// an interrupted write, and never disturb the writer (it once removed a running apply's
// temporary journal).
func TestApplyAndStatusRace(t *testing.T) {
	fx := newFixture(t, mpsBase, mpsSteps()...)
	s := mustLoad(t, fx.patches)
	const flips = 20
	var wg sync.WaitGroup
	stop := make(chan struct{})
	errs := make(chan error, 100)
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(stop)
		root, err := os.OpenRoot(fx.repo)
		if err != nil {
			errs <- err
			return
		}
		defer root.Close()
		for i := 0; i < flips; i++ {
			do := Apply
			if i%2 == 1 {
				do = Unapply
			}
			if res, err := do(root, s, Options{}); err != nil || res.Noop {
				errs <- fmt.Errorf("flip %d: noop=%v err=%v", i, res != nil && res.Noop, err)
				return
			}
		}
	}()
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			root, err := os.OpenRoot(fx.repo)
			if err != nil {
				errs <- err
				return
			}
			defer root.Close()
			for {
				select {
				case <-stop:
					return
				default:
				}
				st, err := Inspect(root, s)
				if err != nil {
					errs <- fmt.Errorf("status: %v", err)
					return
				}
				if sum := st.Summary(); (sum != Applied && sum != NotApplied) || st.Interrupted != nil {
					errs <- fmt.Errorf("status saw %s (%+v)", sum, st.Interrupted)
					return
				}
				// A status is a process of its own, started now and then; back to back
				// in-process readers would hold the shared lock without a gap.
				time.Sleep(time.Millisecond)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestBusyTreeIsRefusedAfterAWait(t *testing.T) {
	dir := t.TempDir()
	root := openRoot(t, dir)
	unlock, err := lockTree(root, true, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	fx := newFixture(t, mpsBase, mpsSteps()...)
	s := mustLoad(t, fx.patches)
	saved := LockWait
	LockWait = 50 * time.Millisecond
	defer func() { LockWait = saved }()
	if _, err := Inspect(openRoot(t, dir), s); !errors.Is(err, ErrBusy) {
		t.Errorf("status on a locked tree: have %v, want ErrBusy", err)
	}
	if _, err := Apply(openRoot(t, dir), s, Options{}); !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "another mpspatch is working on this tree") {
		t.Errorf("apply on a locked tree: have %v, want ErrBusy", err)
	}
}

// TestHeldLockLetsItsHolderWorkAndKeepsOthersOut: a caller holding the tree's lock
// (mpspatch run) applies and inspects under it without waiting for itself, while any
// other writer or reader of the tree is refused as busy until it lets go; a lock held
// on another tree is not taken for this one's.
func TestHeldLockLetsItsHolderWorkAndKeepsOthersOut(t *testing.T) {
	fx := newFixture(t, mpsBase, mpsSteps()...)
	s := mustLoad(t, fx.patches)
	saved := LockWait
	LockWait = 50 * time.Millisecond
	defer func() { LockWait = saved }()
	held, err := Hold(openRoot(t, fx.repo))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Apply(openRoot(t, fx.repo), s, Options{Held: held}); err != nil {
		t.Fatalf("apply under the held lock: %v", err)
	}
	st, err := InspectLocked(openRoot(t, fx.repo), s, held)
	if err != nil || st.Summary() != Applied {
		t.Fatalf("status under the held lock: %v, %v", st, err)
	}
	if _, err := Unapply(openRoot(t, fx.repo), s, Options{}); !errors.Is(err, ErrBusy) {
		t.Errorf("another unapply while the lock is held: have %v, want ErrBusy", err)
	}
	if _, err := Inspect(openRoot(t, fx.repo), s); !errors.Is(err, ErrBusy) {
		t.Errorf("another status while the lock is held: have %v, want ErrBusy", err)
	}
	other := t.TempDir()
	if _, err := InspectLocked(openRoot(t, other), s, held); !errors.Is(err, errLockElsewhere) {
		t.Errorf("another tree's lock: have %v, want errLockElsewhere", err)
	}
	held.Release()
	held.Release()
	if _, err := Unapply(openRoot(t, fx.repo), s, Options{}); err != nil {
		t.Errorf("unapply after the lock was released: %v", err)
	}
	if _, err := Apply(openRoot(t, fx.repo), s, Options{Held: held}); !errors.Is(err, errLockElsewhere) {
		t.Errorf("a released lock taken for held: have %v", err)
	}
}

// TestZeroContextInsertionAsGit pins where a hunk without old lines (git diff -U0) goes:
// after the line its header names, as `git apply --unidiff-zero` puts it.
func TestZeroContextInsertionAsGit(t *testing.T) {
	dir := t.TempDir()
	git(t, dir, "init", "-q")
	in := "b\nba\nc\nb\n"
	writeFiles(t, dir, map[string]string{"f.txt": in, "p.diff": "diff --git a/f.txt b/f.txt\n--- a/f.txt\n+++ b/f.txt\n@@ -2,0 +3,1 @@\n+new\n"})
	git(t, dir, "apply", "--unidiff-zero", "p.diff")
	want, err := os.ReadFile(filepath.Join(dir, "f.txt"))
	if err != nil {
		t.Fatal(err)
	}
	files, _, err := gitdiff.Parse(strings.NewReader("diff --git a/f.txt b/f.txt\n--- a/f.txt\n+++ b/f.txt\n@@ -2,0 +3,1 @@\n+new\n"))
	if err != nil {
		t.Fatal(err)
	}
	have, _, fail := applyFragments([]byte(in), files[0].TextFragments)
	if fail != nil || string(have) != string(want) {
		t.Errorf("have %q (fail %v), want git's %q", have, fail, want)
	}
}

func TestConflictReportShowsNoControlCharacters(t *testing.T) {
	c := &Conflict{Verb: "apply", Patch: "0001-x.patch", File: "a\x1b[2J.txt", Hunk: 1, Hunks: 1,
		Header: "@@ -1,2 +1,2 @@ \x1b]0;title\x07", Reason: "context mismatch at line 1",
		Expected: []string{"one\x1b[31m\n", "two\n"}, Found: []string{"one\n", "tw\x9bo\n"}, FoundLine: 1, Matched: 1}
	r := c.Report()
	if strings.ContainsAny(r, "\x1b\x07\u009b") {
		t.Errorf("report carries control characters:\n%q", r)
	}
	for _, want := range []string{`"a\033[2J.txt"`, `\033]0;title\007`, `one\033[31m`} {
		if !strings.Contains(r, want) {
			t.Errorf("report lacks %s:\n%s", want, r)
		}
	}
}
