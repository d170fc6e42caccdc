package stack

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mpspatch/mpspatch/internal/series"
)

// The differential tests compare mpspatch with git on real history: this repository's
// own, which every clone holds (never another project's). A disagreement is a bug until
// shown to be git's. docs/authoring.md reports the tallies.

// ownHistory returns this repository's top directory and its first-parent chain of
// non-merge commits, oldest first, split into runs where each commit's parent is the
// one before it.
func ownHistory(t *testing.T) (string, [][]string) {
	t.Helper()
	out, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Fatalf("the differential tests read this repository's own history: run them in a git clone of mpspatch (%v)", err)
	}
	top := strings.TrimSpace(string(out))
	if sh, _ := exec.Command("git", "-C", top, "rev-parse", "--is-shallow-repository").Output(); strings.TrimSpace(string(sh)) == "true" {
		t.Fatalf("%s is a shallow clone; the differential tests need its history: git fetch --unshallow", top)
	}
	out, err = exec.Command("git", "-C", top, "rev-list", "--first-parent", "--reverse", "--parents", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	var runs [][]string
	var cur []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(l)
		if len(f) != 2 { // a root or a merge ends a run
			if len(cur) > 1 {
				runs = append(runs, cur)
			}
			cur = []string{f[0]}
			continue
		}
		if len(cur) == 0 || cur[len(cur)-1] != f[1] {
			if len(cur) > 1 {
				runs = append(runs, cur)
			}
			cur = []string{f[1]}
		}
		cur = append(cur, f[0])
	}
	if len(cur) > 1 {
		runs = append(runs, cur)
	}
	total := 0
	for _, r := range runs {
		total += len(r)
	}
	if total < 60 {
		t.Fatalf("%s has %d linear first-parent commits; the differential tests want at least 60", top, total)
	}
	return top, runs
}

// diffHostileGitconfig adds to the export fixture's hostile settings the ones that steer
// git rebase, git am and git apply.
const diffHostileGitconfig = hostileGitconfig + `[merge]
	conflictStyle = zdiff3
	renames = false
[rebase]
	autoSquash = true
	autoStash = true
	updateRefs = true
	missingCommitsCheck = error
[apply]
	whitespace = fix
[am]
	keepcr = true
	threeWay = true
[core]
	autocrlf = input
	whitespace = trailing-space,space-before-tab
[commit]
	gpgSign = false
	cleanup = whitespace
[pull]
	rebase = merges
`

// diffEnv is a hostile environment for both tools, over a clone of this repository.
func diffEnv(t *testing.T, top string) (*env, string) {
	t.Helper()
	e := newEnv(t, false)
	gc := "[init]\n\tdefaultBranch = main\n[advice]\n\tdetachedHead = false\n" + diffHostileGitconfig
	if err := os.WriteFile(filepath.Join(e.home, ".gitconfig"), []byte(gc), 0o644); err != nil {
		t.Fatal(err)
	}
	clone := filepath.Join(t.TempDir(), "own")
	e.git(filepath.Dir(clone), "clone", "-q", "--no-checkout", top, clone)
	return e, clone
}

// reset puts the clone at rev, detached, clean, with no series branch and no rebase.
func reset(e *env, dir, rev string) {
	e.t.Helper()
	for _, d := range []string{".git/rebase-merge", ".git/rebase-apply", ".git/" + stateDirName} {
		os.RemoveAll(filepath.Join(dir, d))
	}
	e.git(dir, "checkout", "-q", "-f", "--detach", rev)
	e.git(dir, "clean", "-q", "-fdx")
	exec.Command("git", "-C", dir, "branch", "-q", "-D", "series", DefaultBranch).Run()
}

// TestDifferentialRebase moves short runs of this repository's commits onto older
// commits with git rebase and with mpspatch rebase: where both finish, the trees must be
// the same; where one stops, the other must stop at the same commit.
func TestDifferentialRebase(t *testing.T) {
	if testing.Short() {
		t.Skip("rebases real history about 60 times")
	}
	top, runs := ownHistory(t)
	e, clone := diffEnv(t, top)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(20, 11))
	const trials = 24
	var same, bothStopped, disagree int
	for trial := 0; trial < trials; trial++ {
		run := runs[rng.IntN(len(runs))]
		if len(run) < 8 {
			trial--
			continue
		}
		n := 1 + rng.IntN(4)
		i := 1 + rng.IntN(len(run)-n-1) // base run[i], series run[i+1..i+n]
		back := 1 + rng.IntN(min(i, 6)) // onto run[i-back]: an older commit
		base, head, onto := run[i], run[i+n], run[i-back]
		label := fmt.Sprintf("trial %d: %.8s..%.8s onto %.8s", trial, base, head, onto)

		// git rebase, as a user would run it.
		reset(e, clone, head)
		e.git(clone, "checkout", "-q", "-B", "series")
		gitStop := -1
		cmd := exec.Command("git", "rebase", "-q", "--onto", onto, base)
		cmd.Dir, cmd.Env = clone, e.vars
		if out, err := cmd.CombinedOutput(); err != nil {
			done := strings.Fields(e.git(clone, "rev-list", onto+"..HEAD"))
			gitStop = len(done) // commits made before the stop
			_ = out
			exec.Command("git", "-C", clone, "rebase", "--abort").Run()
		}
		gitTree := ""
		if gitStop < 0 {
			gitTree = e.git(clone, "rev-parse", "HEAD^{tree}")
		}

		reset(e, clone, head)
		e.git(clone, "checkout", "-q", "-B", "series")
		root, err := os.OpenRoot(clone)
		if err != nil {
			t.Fatal(err)
		}
		res, err := Rebase(ctx, e.g, root, RebaseOptions{Tree: clone, Base: base, Onto: onto})
		root.Close()
		var stop *StopError
		switch {
		case err == nil && res.Done:
			have := e.git(clone, "rev-parse", "HEAD^{tree}")
			if gitStop >= 0 {
				disagree++
				t.Errorf("%s: mpspatch finished (tree %.12s), git rebase stopped", label, have)
			} else if have != gitTree {
				disagree++
				t.Errorf("%s: mpspatch tree %.12s, git rebase's %.12s:\n%s", label, have, gitTree, e.git(clone, "diff", "--stat", gitTree, "HEAD"))
			} else {
				same++
			}
		case errors.As(err, &stop):
			// Where: the commits made before the stop (git drops empty ones too).
			made := 0
			for _, o := range res.State.Outcomes {
				if o.NewCommit != "" {
					made++
				}
			}
			switch {
			case gitStop < 0:
				disagree++
				t.Errorf("%s: mpspatch stopped at %s (%s), git rebase finished", label, stop.Stop.Patch, stop.Stop.Reason)
			case made != gitStop:
				disagree++
				t.Errorf("%s: mpspatch stopped after %d commits (at %s), git rebase after %d", label, made, stop.Stop.Patch, gitStop)
			default:
				bothStopped++
			}
		default:
			t.Fatalf("%s: mpspatch rebase: %v", label, err)
		}
	}
	t.Logf("rebase vs git rebase on this repository's history: %d trials, %d same tree, %d both stopped, %d disagreements", trials, same, bothStopped, disagree)
	if same == 0 {
		t.Errorf("no trial finished in both tools: the trials prove nothing")
	}
}

// TestDifferentialRoundTrip formats runs of this repository's commits with git
// format-patch, imports them, applies them with apply --commit on the run's base and
// exports them again, mpspatch running under a hostile ~/.gitconfig: every commit's tree,
// author, date and message must be the original's, and the exported series the imported
// one byte for byte. Mails written under the hostile config (no a/ b/ prefixes, a
// [HOSTILE n/m] subject, an in-body From:, extra headers, a cover letter) must make the
// commits git am makes of them.
func TestDifferentialRoundTrip(t *testing.T) {
	if testing.Short() {
		t.Skip("round-trips real history")
	}
	top, runs := ownHistory(t)
	e, clone := diffEnv(t, top)
	plain := newEnv(t, false)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(20, 6))
	const ranges = 10
	var commits, amCommits int
	for k := 0; k < ranges; k++ {
		run := runs[rng.IntN(len(runs))]
		if len(run) < 4 {
			k--
			continue
		}
		n := 1 + rng.IntN(min(len(run)-1, 8))
		i := rng.IntN(len(run) - n)
		base, head := run[i], run[i+n]
		label := fmt.Sprintf("range %d: %.8s..%.8s", k, base, head)
		orig := strings.Fields(e.git(top, "rev-list", "--reverse", base+".."+head))
		describe := func(g *env, dir, rev string) string {
			return g.git(dir, "log", "-1", "--format=%an%n%ae%n%ad%n%T%n%B", "--date=raw", rev)
		}

		// Leg 1: mails as git format-patch writes them by default.
		mails := filepath.Join(t.TempDir(), "mails")
		plain.git(top, "format-patch", "-q", "--full-index", "-o", mails, base+".."+head)
		dir := filepath.Join(t.TempDir(), "patches")
		if _, err := Import(context.Background(), ImportOptions{Src: mails, Dir: dir}); err != nil {
			t.Errorf("%s: import: %v", label, err)
			continue
		}
		made := applyCommitsIn(t, e, clone, base, dir, label)
		if len(made) != len(orig) {
			continue
		}
		for j, c := range made {
			have, _ := stripSeriesID([]byte(describe(e, clone, c)))
			if want := describe(e, top, orig[j]); strings.TrimSpace(string(have)) != strings.TrimSpace(want) {
				t.Errorf("%s: commit %d is not the original:\n%s\nwant:\n%s", label, j+1, have, want)
			}
			commits++
		}
		out := filepath.Join(t.TempDir(), "exported")
		if _, err := Export(ctx, e.g, ExportOptions{Tree: clone, Base: base, Dir: out}); err != nil {
			t.Errorf("%s: export: %v", label, err)
			continue
		}
		imported, exported := dirFiles(t, dir), dirFiles(t, out)
		for name, data := range imported {
			if name != series.OrderFile && exported[name] != data {
				t.Errorf("%s: exported %s differs from the imported mail:\n--- imported\n%.600s\n--- exported\n%.600s", label, name, data, exported[name])
			}
		}

		// Leg 2: mails written under the hostile config, against git am.
		hostile := filepath.Join(t.TempDir(), "hostile")
		e.git(top, "format-patch", "-q", "--no-base", "-o", hostile, base+".."+head)
		hdir := filepath.Join(t.TempDir(), "hpatches")
		if _, err := Import(context.Background(), ImportOptions{Src: hostile, Dir: hdir}); err != nil {
			t.Errorf("%s: import of hostile-config mails: %v", label, err)
			continue
		}
		made = applyCommitsIn(t, e, clone, base, hdir, label+" (hostile mails)")
		reset(e, clone, base)
		names, _ := filepath.Glob(filepath.Join(hostile, "*.patch"))
		var patchFiles []string
		for _, nm := range names {
			if !strings.HasSuffix(nm, "0000-cover-letter.patch") {
				patchFiles = append(patchFiles, nm)
			}
		}
		// The hostile config's diff.noprefix makes mails without a/ b/: git am takes them
		// only with -p0, which is what mpspatch import works out by itself. Its
		// apply.whitespace=fix would rewrite the patch's own lines (this repository's patch
		// files hold blank context lines, " " alone): --whitespace=nowarn keeps the bytes,
		// as import always does.
		e.git(clone, append([]string{"am", "-q", "--no-3way", "-p0", "--whitespace=nowarn"}, patchFiles...)...)
		am := strings.Fields(e.git(clone, "rev-list", "--reverse", base+"..HEAD"))
		if len(am) != len(made) {
			t.Errorf("%s: git am made %d commits, apply --commit %d", label, len(am), len(made))
			continue
		}
		for j := range am {
			have, _ := stripSeriesID([]byte(describe(e, clone, made[j])))
			want := describe(e, clone, am[j])
			// git am's committer date is now; the author date is the mail's, compared.
			if strings.TrimSpace(string(have)) != strings.TrimSpace(want) {
				t.Errorf("%s: hostile mail %d: apply --commit made\n%s\ngit am made\n%s", label, j+1, have, want)
			}
			amCommits++
		}
	}
	t.Logf("import -> apply --commit -> export on this repository's history: %d ranges, %d commits round-tripped byte for byte; %d commits from hostile-config mails equal to git am's", ranges, commits, amCommits)
	if commits == 0 || amCommits == 0 {
		t.Errorf("no commit compared: the ranges prove nothing")
	}
}

// applyCommitsIn runs apply --commit of the series in dir on base in clone and returns
// the commits it made (none, with an error reported, when it fails).
func applyCommitsIn(t *testing.T, e *env, clone, base, dir, label string) []string {
	t.Helper()
	reset(e, clone, base)
	s, err := series.Load(os.DirFS(dir), ".", dir)
	if err != nil {
		t.Errorf("%s: load imported series: %v", label, err)
		return nil
	}
	root, err := os.OpenRoot(clone)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	res, err := ApplyCommits(context.Background(), e.g, root, s, ApplyCommitsOptions{Tree: clone})
	if err != nil {
		t.Errorf("%s: apply --commit: %v", label, err)
		return nil
	}
	var out []string
	for _, c := range res.Patches {
		out = append(out, c.Commit)
	}
	return out
}
