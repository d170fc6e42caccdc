package cli

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// clonedRunFixture is a run fixture whose checkout exists: cloned by a run that stops
// after the clone stage.
func clonedRunFixture(t *testing.T) runFixture {
	t.Helper()
	f := newRunFixture(t)
	hostOS = "linux"
	t.Setenv("FAKE_MODE", "ok")
	if code, stdout, stderr := runMain(t, f.args("--until", "clone")...); code != ExitOK {
		t.Fatalf("clone: exit %d\n%s\n%s", code, stdout, stderr)
	}
	return f
}

// copyCheckout copies a checkout as `cp -a` would: a new directory, links kept as links.
func copyCheckout(t *testing.T, from, to string) {
	t.Helper()
	if out, err := exec.Command("cp", "-a", from, to).CombinedOutput(); err != nil {
		t.Fatalf("cp -a %s %s: %v\n%s", from, to, err, out)
	}
}

func writeVictim(t *testing.T, dir, name string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("the user's own file, read-only\n"), 0o444); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRunRefusesPlantedStateLinks: a checkout can carry symbolic links where `run` keeps
// its state. Every one is refused, as bad input (exit 2) naming the path, before the
// first write: nothing lands outside the tree or in .git, and no victim file changes.
func TestRunRefusesPlantedStateLinks(t *testing.T) {
	base := clonedRunFixture(t)
	tests := []struct {
		name string
		// plant makes the hostile checkout and returns the path the error must name.
		plant func(t *testing.T, tree, outside string) string
	}{
		{"state dir links outside the tree", func(t *testing.T, tree, outside string) string {
			mustRemoveAll(t, filepath.Join(tree, ".mpspatch"))
			mustSymlink(t, outside, filepath.Join(tree, ".mpspatch"))
			return ".mpspatch"
		}},
		{"run dir links into .git/hooks", func(t *testing.T, tree, outside string) string {
			mustRemoveAll(t, filepath.Join(tree, ".mpspatch/run"))
			mustSymlink(t, "../.git/hooks", filepath.Join(tree, ".mpspatch/run"))
			return ".mpspatch/run"
		}},
		{"stamps dir links to a victim's directory", func(t *testing.T, tree, outside string) string {
			writeVictim(t, outside, "apply.json")
			writeVictim(t, outside, "clone.json")
			mustRemoveAll(t, filepath.Join(tree, ".mpspatch/run/stamps"))
			mustSymlink(t, outside, filepath.Join(tree, ".mpspatch/run/stamps"))
			return ".mpspatch/run/stamps"
		}},
		{"report dir links to a victim's directory", func(t *testing.T, tree, outside string) string {
			writeVictim(t, outside, "audit.sarif")
			mustRemoveAll(t, filepath.Join(tree, ".mpspatch/run/report"))
			mustSymlink(t, outside, filepath.Join(tree, ".mpspatch/run/report"))
			return ".mpspatch/run/report"
		}},
		{"logs dir links outside", func(t *testing.T, tree, outside string) string {
			mustRemoveAll(t, filepath.Join(tree, ".mpspatch/run/logs"))
			mustSymlink(t, outside, filepath.Join(tree, ".mpspatch/run/logs"))
			return ".mpspatch/run/logs"
		}},
		{"build and clone logs dir links outside", func(t *testing.T, tree, outside string) string {
			mustRemoveAll(t, filepath.Join(tree, ".mpspatch/logs"))
			mustSymlink(t, outside, filepath.Join(tree, ".mpspatch/logs"))
			return ".mpspatch/logs"
		}},
		{"verify's results file links to a victim", func(t *testing.T, tree, outside string) string {
			victim := writeVictim(t, outside, "results.jsonl")
			if err := os.MkdirAll(filepath.Join(tree, ".mpspatch/run/report"), 0o755); err != nil {
				t.Fatal(err)
			}
			mustSymlink(t, victim, filepath.Join(tree, ".mpspatch/run/report/results.jsonl"))
			return ".mpspatch/run/report/results.jsonl"
		}},
		{"state dir is a file", func(t *testing.T, tree, outside string) string {
			mustRemoveAll(t, filepath.Join(tree, ".mpspatch/run"))
			if err := os.WriteFile(filepath.Join(tree, ".mpspatch/run"), []byte("x\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			return ".mpspatch/run"
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			work := t.TempDir()
			f := base
			f.dir = filepath.Join(work, "pytorch")
			copyCheckout(t, base.dir, f.dir)
			outside := filepath.Join(work, "outside")
			if err := os.MkdirAll(outside, 0o755); err != nil {
				t.Fatal(err)
			}
			named := tt.plant(t, f.dir, outside)
			before := snapshotAll(t, work)

			code, stdout, stderr := runMain(t, f.args("--until", "audit")...)
			if code != ExitUsage {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, ExitUsage, stdout, stderr)
			}
			if want := filepath.Join(f.dir, named); !strings.Contains(stderr, want) {
				t.Errorf("the error does not name %s:\n%s", want, stderr)
			}
			if after := snapshotAll(t, work); after != before {
				t.Errorf("run wrote before refusing (the tree, its .git, or outside it):\nbefore:\n%s\nafter:\n%s", before, after)
			}
		})
	}
}

// TestRunDoesNotWriteIntoADirectoryItRefuses: a non-empty directory that is not a
// checkout is refused by the clone, and nothing may be written into it first.
func TestRunDoesNotWriteIntoADirectoryItRefuses(t *testing.T) {
	f := newRunFixture(t)
	hostOS = "linux"
	if err := os.MkdirAll(f.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.dir, "notes.txt"), []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := snapshotAll(t, filepath.Dir(f.dir))
	code, stdout, stderr := runMain(t, f.args("--until", "audit")...)
	if code != ExitUsage {
		t.Fatalf("exit %d, want %d\n%s\n%s", code, ExitUsage, stdout, stderr)
	}
	if !strings.Contains(stderr, "not empty") || !strings.Contains(stderr, f.dir) {
		t.Errorf("the error does not say the directory is not empty:\n%s", stderr)
	}
	if after := snapshotAll(t, filepath.Dir(f.dir)); after != before {
		t.Errorf("run wrote into a directory it refused:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// TestRunDoesNotWriteIntoACheckoutOfAnotherCommit: a checkout of a commit other than the
// pinned one is refused by the clone stage (exit 2, with the summary), and the refusal
// leaves the checkout as it was: no .mpspatch, no log, not a byte changed (issue 21 item 8).
func TestRunDoesNotWriteIntoACheckoutOfAnotherCommit(t *testing.T) {
	f := newRunFixture(t)
	hostOS = "linux"
	other := filepath.Join(t.TempDir(), "other")
	git(t, filepath.Dir(other), "init", "-q", other)
	if err := os.WriteFile(filepath.Join(other, "x"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, other, "add", "-A")
	git(t, other, "commit", "-q", "-m", "unrelated")
	f.dir = other
	for _, extra := range [][]string{nil, {"--from", "apply", "--until", "audit"}} {
		before := snapshotAll(t, filepath.Dir(other))
		code, stdout, stderr := runMain(t, f.args(extra...)...)
		if code != ExitUsage {
			t.Fatalf("run %v: exit %d, want %d\n%s\n%s", extra, code, ExitUsage, stdout, stderr)
		}
		have, rep := runOutcomes(t, stdout)
		if !strings.HasPrefix(have, "clone=failed apply=not-reached audit=not-reached") || !strings.Contains(rep.Stages[0].Reason, "not of the pinned commit") {
			t.Errorf("run %v: %s, %+v", extra, have, rep.Stages[0])
		}
		if line := lineWith(stderr, "run: clone failed"); !strings.HasPrefix(line, "run: clone failed (exit 2): ") {
			t.Errorf("run %v: stderr lacks the clone's refusal:\n%s", extra, stderr)
		}
		if _, err := os.Lstat(filepath.Join(other, ".mpspatch")); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("run %v: .mpspatch after the refusal: %v", extra, err)
		}
		if after := snapshotAll(t, filepath.Dir(other)); after != before {
			t.Errorf("run %v wrote into the checkout it refused:\nbefore:\n%s\nafter:\n%s", extra, before, after)
		}
	}
}

// TestRunWritesNothingIntoTheWorkingDirectory: stages that fail before they run (verify
// without an interpreter, a clone refused) leave the current directory as it was.
func TestRunWritesNothingIntoTheWorkingDirectory(t *testing.T) {
	f := clonedRunFixture(t)
	cwd := t.TempDir()
	t.Chdir(cwd)
	code, stdout, stderr := runMain(t, f.args("--python", filepath.Join(cwd, "no-such-python"))...)
	if code == ExitOK {
		t.Fatalf("run with a missing interpreter: exit 0\n%s\n%s", stdout, stderr)
	}
	entries, err := os.ReadDir(cwd)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		t.Errorf("run left %s in the working directory", e.Name())
	}
}

// TestRunAfterUnapplyAppliesAgain: the apply stamp is bound to the tree's state, so a
// tree unapplied since is never called up to date (nor audited or built unpatched).
func TestRunAfterUnapplyAppliesAgain(t *testing.T) {
	f := newRunFixture(t)
	hostOS = "linux"
	t.Setenv("FAKE_MODE", "ok")
	args := f.args("--until", "build")
	if code, stdout, stderr := runMain(t, args...); code != ExitOK {
		t.Fatalf("first run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if code, stdout, stderr := runMain(t, "--config", f.config, "unapply", "--tree", f.dir); code != ExitOK {
		t.Fatalf("unapply: exit %d\n%s\n%s", code, stdout, stderr)
	}
	code, stdout, stderr := runMain(t, args...)
	have, _ := runOutcomes(t, stdout)
	if want := "clone=up-to-date apply=ran audit=ran build=ran"; code != ExitOK || have != want {
		t.Fatalf("run after unapply: exit %d\nhave %s\nwant %s\n%s", code, have, want, stderr)
	}
	if !treeIsPatched(t, f.dir) {
		t.Error("the tree is not patched after the run")
	}
	// And with nothing changed since, everything is up to date again.
	code, stdout, stderr = runMain(t, args...)
	if have, _ := runOutcomes(t, stdout); code != ExitOK || have != "clone=up-to-date apply=up-to-date audit=up-to-date build=up-to-date" {
		t.Fatalf("third run: exit %d, %s\n%s", code, have, stderr)
	}
	// A hand edit to a file the series touches redoes the audit and what follows.
	stream := filepath.Join(f.dir, "aten/src/ATen/mps/Stream.mm")
	data, err := os.ReadFile(stream)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(stream, append(data, "// local note\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = runMain(t, args...)
	if have, _ := runOutcomes(t, stdout); code != ExitOK || have != "clone=up-to-date apply=ran audit=ran build=ran" {
		t.Fatalf("after a hand edit: exit %d, %s\n%s", code, have, stderr)
	}
}

// TestRunIgnoresStampsOfAnotherCheckout: stamps copied from checkout A into checkout B
// (same series, same patched files) are not B's; nor are those of a `cp -a` copy of A.
func TestRunIgnoresStampsOfAnotherCheckout(t *testing.T) {
	f := newRunFixture(t)
	hostOS = "linux"
	t.Setenv("FAKE_MODE", "ok")
	args := func(dir string) []string {
		g := f
		g.dir = dir
		return g.args("--until", "audit")
	}
	if code, stdout, stderr := runMain(t, args(f.dir)...); code != ExitOK {
		t.Fatalf("run in A: exit %d\n%s\n%s", code, stdout, stderr)
	}
	b := filepath.Join(t.TempDir(), "b")
	if code, stdout, stderr := runMain(t, append(args(b), "--until", "clone")...); code != ExitOK {
		t.Fatalf("clone B: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if code, stdout, stderr := runMain(t, "--config", f.config, "apply", "--tree", b); code != ExitOK {
		t.Fatalf("apply in B: exit %d\n%s\n%s", code, stdout, stderr)
	}
	mustRemoveAll(t, filepath.Join(b, ".mpspatch/run/stamps"))
	copyCheckout(t, filepath.Join(f.dir, ".mpspatch/run/stamps"), filepath.Join(b, ".mpspatch/run/stamps"))
	code, stdout, stderr := runMain(t, args(b)...)
	if have, _ := runOutcomes(t, stdout); code != ExitOK || have != "clone=ran apply=ran audit=ran" {
		t.Errorf("B with A's stamps: exit %d, %s (want every stage run)\n%s", code, have, stderr)
	}

	c := filepath.Join(t.TempDir(), "c")
	copyCheckout(t, f.dir, c)
	code, stdout, stderr = runMain(t, args(c)...)
	if have, _ := runOutcomes(t, stdout); code != ExitOK || have != "clone=ran apply=ran audit=ran" {
		t.Errorf("a cp -a copy of A: exit %d, %s (want every stage run)\n%s", code, have, stderr)
	}
	// A itself still trusts its own stamps.
	code, stdout, stderr = runMain(t, args(f.dir)...)
	if have, _ := runOutcomes(t, stdout); code != ExitOK || have != "clone=up-to-date apply=up-to-date audit=up-to-date" {
		t.Errorf("A again: exit %d, %s\n%s", code, have, stderr)
	}
}

func treeIsPatched(t *testing.T, dir string) bool {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "aten/src/ATen/mps/Stream.mm"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Contains(string(data), "wait();")
}

func mustRemoveAll(t *testing.T, p string) {
	t.Helper()
	if err := os.RemoveAll(p); err != nil {
		t.Fatal(err)
	}
}

func mustSymlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// TestRunRefusesAReportDirUnderGit: --report-dir inside the tree's .git is refused before
// anything is written.
func TestRunRefusesAReportDirUnderGit(t *testing.T) {
	f := clonedRunFixture(t)
	before := snapshotAll(t, f.dir)
	code, stdout, stderr := runMain(t, f.args("--until", "audit", "--report-dir", filepath.Join(f.dir, ".git", "reports"))...)
	if code != ExitUsage || !strings.Contains(stderr, "under .git") {
		t.Fatalf("exit %d, want %d and the reason\n%s\n%s", code, ExitUsage, stdout, stderr)
	}
	if after := snapshotAll(t, f.dir); after != before {
		t.Errorf("run wrote before refusing:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// TestRunUsageErrorsWriteNothing: flags that cannot work are refused (exit 2) before the
// directory is made.
func TestRunUsageErrorsWriteNothing(t *testing.T) {
	f := newRunFixture(t)
	runCases(t, []mainCase{
		{name: "until before from", args: f.args("--from", "verify", "--until", "build"), wantCode: ExitUsage, wantStderr: "--until build comes before --from verify"},
		{name: "report dir is the tree", args: f.args("--report-dir", f.dir), wantCode: ExitUsage, wantStderr: "is the tree itself"},
	})
	if _, err := os.Lstat(f.dir); !os.IsNotExist(err) {
		t.Errorf("a refused run made %s: %v", f.dir, err)
	}
}
