package stack

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// upstreamV2 commits changes on main (from v1) and tags the result v2.
func (f *fixture) upstreamV2(change func(path func(string) string)) {
	f.t.Helper()
	change(func(name string) string { return filepath.Join(f.up, name) })
	f.git(f.up, "add", "-A")
	f.git(f.up, "commit", "-q", "-m", "upstream: v2 changes")
	f.git(f.up, "tag", "v2")
}

func (f *fixture) edit(path, old, new string) {
	write(f.t, path, replaceLine(read(f.t, path), old, new))
}

func (f *fixture) rebase(tree string) (*RebaseResult, error) {
	return Rebase(context.Background(), f.g, openRoot(f.t, tree), RebaseOptions{Tree: tree, Base: "v1", Onto: "v2", Intents: testIntents})
}

func outcomes(st *RebaseState) map[string]PatchOutcome {
	out := map[string]PatchOutcome{}
	for _, o := range st.Outcomes {
		out[o.Name[:4]] = o
	}
	return out
}

func TestRebaseOutcomes(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	f.upstreamV2(func(p func(string) string) {
		write(t, p("a.c"), lines("moved", 5)+read(t, p("a.c"))) // 0001: offset 5
		f.edit(p("b.c"), "b line 18", "b line 18 upstream")     // 0002: context edited, 3-way
		f.edit(p("c.c"), "c line 5", "c line 5 THREAD")         // 0004: absorbed
	})
	tree := f.applyCommits()
	res, err := f.rebase(tree)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Done {
		t.Fatal("rebase not done")
	}
	o := outcomes(res.State)
	want := map[string]string{"0001": OutcomeOffset, "0002": OutcomeMerged, "0003": OutcomeClean, "0004": OutcomeEmpty, "0005": OutcomeClean, "0006": OutcomeClean}
	for id, w := range want {
		if o[id].Outcome != w {
			t.Errorf("%s: outcome %q, want %q", id, o[id].Outcome, w)
		}
	}
	if o["0001"].Offset != 5 {
		t.Errorf("0001 offset %d, want 5", o["0001"].Offset)
	}
	if v2 := f.git(f.up, "rev-parse", "v2"); o["0004"].Upstream != v2 || o["0004"].UpstreamSubject != "upstream: v2 changes" {
		t.Errorf("0004 upstream = %q %q, want %s", o["0004"].Upstream, o["0004"].UpstreamSubject, v2)
	}
	if !o["0002"].Changed || !strings.Contains(o["0002"].RangeDiff, "+ b line 18 upstream") {
		t.Errorf("0002 content change not reported: %+v", o["0002"])
	}
	if o["0001"].Changed {
		t.Errorf("0001 only moved, but reported as changed:\n%s", o["0001"].RangeDiff)
	}
	if br := f.git(tree, "symbolic-ref", "--short", "HEAD"); br != DefaultBranch {
		t.Errorf("HEAD on %q after rebase", br)
	}
	if n := f.git(tree, "rev-list", "--count", "v2..HEAD"); n != "5" {
		t.Errorf("%s commits on v2, want 5 (0004 dropped)", n)
	}
	if s := f.git(tree, "status", "--porcelain"); s != "" {
		t.Errorf("tree not clean after rebase:\n%s", s)
	}
	b := read(t, filepath.Join(tree, "b.c"))
	if !strings.Contains(b, "b line 18 upstream\n") || !strings.Contains(b, "b line 20 GUARDED\n") {
		t.Errorf("b.c lacks one side of the merge:\n%s", b)
	}
	// Re-export onto v2: 0004 retired, the rest kept, the Series-Ids intact.
	ex, err := Export(context.Background(), f.g, ExportOptions{Tree: tree, Base: "v2", Dir: f.patches})
	if err != nil {
		t.Fatal(err)
	}
	if len(ex.Retired) != 1 || ex.Retired[0] != 4 {
		t.Errorf("retired %v, want [4]", ex.Retired)
	}
	f.series()
}

func conflictFixture(t *testing.T) (*fixture, string, string) {
	f := newFixture(t, false)
	f.upstreamV2(func(p func(string) string) {
		f.edit(p("d.c"), "d line 30", "d line 30 UPSTREAM") // 0005: a real conflict
	})
	tree := f.applyCommits()
	orig := f.git(tree, "rev-parse", "HEAD")
	_, err := f.rebase(tree)
	var stop *StopError
	if !errors.As(err, &stop) || stop.Stop.Patch[:4] != "0005" || stop.Stop.Reason != "conflict" {
		t.Fatalf("rebase: err = %v, want a conflict stop at 0005", err)
	}
	if d := read(t, filepath.Join(tree, "d.c")); !strings.Contains(d, "<<<<<<<") {
		t.Fatalf("d.c holds no conflict markers:\n%s", d)
	}
	return f, tree, orig
}

func TestRebaseConflictContinue(t *testing.T) {
	t.Parallel()
	f, tree, _ := conflictFixture(t)
	root := openRoot(t, tree)
	// --continue refuses while the file is unmerged.
	if _, err := Continue(context.Background(), f.g, root, RebaseOptions{Tree: tree, Intents: testIntents}); err == nil || !strings.Contains(err.Error(), "still in conflict") {
		t.Fatalf("continue with conflicts: err = %v", err)
	}
	write(t, filepath.Join(tree, "d.c"), strings.Replace(lines("d", 40), "d line 30\n", "d line 30 UPSTREAM LOCKED\n", 1))
	f.git(tree, "add", "d.c")
	res, err := Continue(context.Background(), f.g, root, RebaseOptions{Tree: tree, Intents: testIntents})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Done || outcomes(res.State)["0005"].Outcome != OutcomeResolved {
		t.Fatalf("after continue: done=%v outcomes=%+v", res.Done, res.State.Outcomes)
	}
	if n := f.git(tree, "rev-list", "--count", "v2..HEAD"); n != "6" {
		t.Errorf("%s commits, want 6", n)
	}
	if msg := f.git(tree, "log", "-1", "--format=%B", "HEAD~1"); !strings.HasSuffix(msg, "Series-Id: 0005") {
		t.Errorf("resolved commit message:\n%s", msg)
	}
}

func TestRebaseConflictSkip(t *testing.T) {
	t.Parallel()
	f, tree, _ := conflictFixture(t)
	res, err := Skip(context.Background(), f.g, openRoot(t, tree), RebaseOptions{Tree: tree, Intents: testIntents})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Done || outcomes(res.State)["0005"].Outcome != OutcomeSkipped {
		t.Fatalf("after skip: %+v", res.State.Outcomes)
	}
	if d := read(t, filepath.Join(tree, "d.c")); d != strings.Replace(lines("d", 40), "d line 30\n", "d line 30 UPSTREAM\n", 1) {
		t.Errorf("d.c after skip:\n%s", d)
	}
	if s := f.git(tree, "status", "--porcelain"); s != "" {
		t.Errorf("tree not clean:\n%s", s)
	}
}

func TestRebaseConflictAbort(t *testing.T) {
	t.Parallel()
	f, tree, orig := conflictFixture(t)
	// Abort must restore exactly what a fresh apply --commit left.
	ref := f.applyCommits()
	if _, err := Abort(context.Background(), f.g, openRoot(t, tree), RebaseOptions{Tree: tree}); err != nil {
		t.Fatal(err)
	}
	assertSameRepoState(t, f, tree, ref, orig)
	if _, err := Continue(context.Background(), f.g, openRoot(t, tree), RebaseOptions{Tree: tree}); !errors.Is(err, ErrNoRebase) {
		t.Errorf("continue after abort: err = %v, want ErrNoRebase", err)
	}
}

// assertSameRepoState checks tree has HEAD on the series branch at orig, a clean work
// tree and the index and files of ref.
func assertSameRepoState(t *testing.T, f *fixture, tree, ref, orig string) {
	t.Helper()
	if br := f.git(tree, "symbolic-ref", "--short", "HEAD"); br != DefaultBranch {
		t.Errorf("HEAD on %q", br)
	}
	if head := f.git(tree, "rev-parse", "HEAD"); head != orig {
		t.Errorf("HEAD at %s, want %s", head, orig)
	}
	if s := f.git(tree, "status", "--porcelain", "--untracked-files=all"); s != "" {
		t.Errorf("tree not clean:\n%s", s)
	}
	if a, b := f.git(tree, "ls-files", "-s"), f.git(ref, "ls-files", "-s"); a != b {
		t.Errorf("index differs:\n%s\n---\n%s", a, b)
	}
	for _, n := range []string{"a.c", "b.c", "c.c", "d.c", "e.c", "new.c"} {
		if read(t, filepath.Join(tree, n)) != read(t, filepath.Join(ref, n)) {
			t.Errorf("%s differs from the reference", n)
		}
	}
}

func TestRebaseBrokenIntent(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	f.upstreamV2(func(p func(string) string) {
		f.edit(p("e.c"), "e line 35", "e line 35 legacy_call()")
	})
	tree := f.applyCommits()
	_, err := f.rebase(tree)
	var stop *StopError
	if !errors.As(err, &stop) || stop.Stop.Reason != "intent" || stop.Stop.Patch[:4] != "0006" {
		t.Fatalf("rebase: err = %v, want an intent stop at 0006", err)
	}
	if !strings.Contains(err.Error(), "applied, but its intent `absent \"legacy_call\" in e.c` no longer holds") {
		t.Errorf("message: %v", err)
	}
	// Continue without fixing stops again; fixing it lets the rebase finish.
	root := openRoot(t, tree)
	if _, err := Continue(context.Background(), f.g, root, RebaseOptions{Tree: tree, Intents: testIntents}); !errors.As(err, &stop) {
		t.Fatalf("continue without a fix: err = %v, want the intent stop again", err)
	}
	f.edit(filepath.Join(tree, "e.c"), "e line 35 legacy_call()", "e line 35")
	f.git(tree, "add", "e.c")
	res, err := Continue(context.Background(), f.g, root, RebaseOptions{Tree: tree, Intents: testIntents})
	if err != nil {
		t.Fatal(err)
	}
	if outcomes(res.State)["0006"].Outcome != OutcomeResolved {
		t.Errorf("0006: %+v", outcomes(res.State)["0006"])
	}
}

// TestRebaseKeepsOneSeriesID: a commit carries exactly one Series-Id trailer after
// apply --commit and after each of two rebases, and no exported patch file carries one.
func TestRebaseKeepsOneSeriesID(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	f.upstreamV2(func(p func(string) string) {
		write(t, p("a.c"), lines("moved", 5)+read(t, p("a.c")))
	})
	tree := f.applyCommits()
	countIDs := func(when, base string) {
		t.Helper()
		for _, sha := range strings.Fields(f.git(tree, "rev-list", base+"..HEAD")) {
			msg := f.git(tree, "log", "-1", "--format=%B", sha)
			if n := strings.Count(msg, TrailerKey+":"); n != 1 {
				t.Errorf("%s: commit %s has %d %s trailers:\n%s", when, sha[:12], n, TrailerKey, msg)
			}
		}
	}
	countIDs("after apply --commit", "v1")
	if _, err := f.rebase(tree); err != nil {
		t.Fatal(err)
	}
	countIDs("after the first rebase", "v2")
	f.git(f.up, "commit", "-q", "--allow-empty", "-m", "upstream: v3")
	f.git(f.up, "tag", "v3")
	f.git(tree, "fetch", "-q", f.up, "refs/tags/v3:refs/tags/v3")
	if _, err := Rebase(context.Background(), f.g, openRoot(t, tree), RebaseOptions{Tree: tree, Base: "v2", Onto: "v3", Intents: testIntents}); err != nil {
		t.Fatal(err)
	}
	countIDs("after the second rebase", "v3")
	out := filepath.Join(t.TempDir(), "out")
	if _, err := Export(context.Background(), f.g, ExportOptions{Tree: tree, Base: "v3", Dir: out}); err != nil {
		t.Fatal(err)
	}
	for name, data := range dirFiles(t, out) {
		if strings.Contains(data, TrailerKey+":") {
			t.Errorf("exported %s carries a %s trailer", name, TrailerKey)
		}
	}
}

// TestRebaseFollowsUpstreamRenames: upstream renamed a.c (and edited it a little) and
// moved d.c into a directory; the patches on them go to the new names, the outcome says
// which renames were followed, and the tree is the one git rebase makes.
func TestRebaseFollowsUpstreamRenames(t *testing.T) {
	t.Parallel()
	f := newFixture(t, true)
	f.upstreamV2(func(p func(string) string) {
		f.git(f.up, "mv", "a.c", "a_renamed.c")
		f.edit(p("a_renamed.c"), "a line 30", "a line 30 upstream")
		if err := os.MkdirAll(p("sub dir"), 0o755); err != nil {
			t.Fatal(err)
		}
		f.git(f.up, "mv", "d.c", "sub dir/d.c")
	})
	tree := f.applyCommits()
	gitTree := f.clone("v1")
	f.git(gitTree, "fetch", "-q", tree, "HEAD:refs/heads/series")
	f.git(gitTree, "checkout", "-q", "series")
	f.git(gitTree, "rebase", "-q", "--onto", "v2", "v1")

	res, err := f.rebase(tree)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Done {
		t.Fatalf("rebase stopped: %+v", res.State.Stopped)
	}
	o := outcomes(res.State)
	if r := o["0001"].Renamed; len(r) != 1 || r[0] != "a.c → a_renamed.c" {
		t.Errorf("0001 renamed = %q, want [a.c → a_renamed.c]", r)
	}
	if r := o["0005"].Renamed; len(r) != 1 || r[0] != "d.c → sub dir/d.c" {
		t.Errorf("0005 renamed = %q, want [d.c → sub dir/d.c]", r)
	}
	if len(o["0002"].Renamed) != 0 {
		t.Errorf("0002 followed renames %q it has no part in", o["0002"].Renamed)
	}
	if have, want := f.git(tree, "rev-parse", "HEAD^{tree}"), f.git(gitTree, "rev-parse", "HEAD^{tree}"); have != want {
		t.Errorf("rebased tree %s, git rebase's %s:\n%s", have, want, f.git(tree, "diff", "--stat", want, "HEAD"))
	}
	if _, err := os.Stat(filepath.Join(tree, "a.c")); err == nil {
		t.Error("a.c came back after the rebase")
	}
}

func TestRenamePaths(t *testing.T) {
	mail := "Subject: x\n\n---\ndiff --git a/x.c b/x.c\nindex 1..2 100644\n--- a/x.c\n+++ b/x.c\n@@ -1 +1 @@\n--- a/x.c\n+x\n" +
		"diff --git a/x.cc b/x.cc\n--- a/x.cc\n+++ b/x.cc\n@@ -1 +1 @@\n-a\n+b\n" +
		"diff --git a/x.c b/y.c\nsimilarity index 90%\nrename from x.c\nrename to y.c\n"
	want := "Subject: x\n\n---\ndiff --git a/new dir/x.c b/new dir/x.c\nindex 1..2 100644\n--- a/new dir/x.c\t\n+++ b/new dir/x.c\t\n@@ -1 +1 @@\n--- a/x.c\n+x\n" +
		"diff --git a/x.cc b/x.cc\n--- a/x.cc\n+++ b/x.cc\n@@ -1 +1 @@\n-a\n+b\n" +
		"diff --git a/new dir/x.c b/y.c\nsimilarity index 90%\nrename from new dir/x.c\nrename to y.c\n"
	// git writes "--- a/new dir/x.c\t" for a path with a space; a header that already
	// had the tab keeps it: feed the input the way git would for the old name (none).
	have := string(renamePaths([]byte(mail), map[string]string{"x.c": "new dir/x.c"}))
	want = strings.ReplaceAll(want, "x.c\t\n", "x.c\n")
	if have != want {
		t.Errorf("renamePaths:\n%s\nwant:\n%s", have, want)
	}
}
