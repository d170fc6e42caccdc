package stack

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFixtureSeriesIsCanonical(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	files := dirFiles(t, f.patches)
	if len(files) != 7 {
		t.Fatalf("exported %d files, want 6 patches and series: %v", len(files), keys(files))
	}
	p := files["0001-a-make-line-10-safe.patch"]
	for _, want := range []string{
		"From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n",
		"Subject: [PATCH] a: make line 10 safe\n",
		"\nIntent: present \"a line 10 SAFE\" in a.c\n---\n",
		"diff --git a/a.c b/a.c\n",
	} {
		if !strings.Contains(p, want) {
			t.Errorf("0001 lacks %q:\n%s", want, p)
		}
	}
	if strings.Contains(p, "Series-Id") || strings.Contains(p, "\n-- \n") {
		t.Errorf("0001 carries a Series-Id or a signature:\n%s", p)
	}
	f.series() // lints clean
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestRoundTrip: apply --commit then export gives the same bytes, twice, whether or not
// ~/.gitconfig tries every setting that changes git format-patch's output.
func TestRoundTrip(t *testing.T) {
	t.Parallel()
	for _, hostile := range []bool{false, true} {
		name := "plain"
		if hostile {
			name = "hostile-gitconfig"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, hostile)
			want := dirFiles(t, f.patches)
			tree := f.applyCommits()

			if have := f.git(tree, "log", "-1", "--format=%B", "HEAD~5"); !strings.HasSuffix(have, "Intent: present \"a line 10 SAFE\" in a.c\nSeries-Id: 0001") {
				t.Errorf("first commit's message:\n%s\nwant the Series-Id appended to the trailers", have)
			}
			if have := f.git(tree, "log", "-1", "--format=%an <%ae> %ad", "--date=iso-strict", "HEAD"); have != "Test Author <author@example.com> 2025-01-02T03:04:05+00:00" {
				t.Errorf("author of the last commit = %q", have)
			}
			for round := 1; round <= 2; round++ {
				res, err := Export(context.Background(), f.g, ExportOptions{Tree: tree, Base: "v1", Dir: f.patches})
				if err != nil {
					t.Fatal(err)
				}
				if res.Changed {
					t.Errorf("round %d: export changed files: %+v", round, res.Files)
				}
				have := dirFiles(t, f.patches)
				for name, data := range want {
					if have[name] != data {
						t.Errorf("round %d: %s differs:\n--- want\n%s\n--- have\n%s", round, name, data, have[name])
					}
				}
			}
			// Into an empty directory: the same names and bytes.
			empty := filepath.Join(t.TempDir(), "fresh")
			if _, err := Export(context.Background(), f.g, ExportOptions{Tree: tree, Base: "v1", Dir: empty}); err != nil {
				t.Fatal(err)
			}
			have := dirFiles(t, empty)
			for name, data := range want {
				if have[name] != data {
					t.Errorf("fresh export: %s differs", name)
				}
			}
		})
	}
}

// TestApplyCommitTreeMatchesApply: the committed tree is byte-identical to plain apply.
func TestApplyCommitTreeMatchesApply(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	committed := f.applyCommits()
	plain := f.git(committed, "rev-parse", "HEAD^{tree}")
	if dev := f.git(f.up, "rev-parse", "dev^{tree}"); dev != plain {
		t.Errorf("apply --commit tree %s, want the dev branch's %s", plain, dev)
	}
	if br := f.git(committed, "symbolic-ref", "--short", "HEAD"); br != DefaultBranch {
		t.Errorf("HEAD on %q, want %q", br, DefaultBranch)
	}
	// A second run refuses to overwrite the branch; --force replaces it.
	f.git(committed, "checkout", "-q", "--detach", "v1")
	_, err := ApplyCommits(context.Background(), f.g, openRoot(t, committed), f.series(), ApplyCommitsOptions{Tree: committed})
	if err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("second apply --commit: err = %v, want branch exists", err)
	}
	if _, err := ApplyCommits(context.Background(), f.g, openRoot(t, committed), f.series(), ApplyCommitsOptions{Tree: committed, Force: true}); err != nil {
		t.Fatal(err)
	}
}

// TestExportStableIDs: subjects change, commits reorder, drop and arrive; IDs hold.
func TestExportStableIDs(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	tree := f.applyCommits()
	commits := strings.Fields(f.git(tree, "rev-list", "--reverse", "v1..HEAD"))
	// New history: 0002 first, 0001 with a new subject, 0003 dropped, the rest, a new one.
	f.git(tree, "checkout", "-q", "--detach", "v1")
	f.git(tree, "cherry-pick", commits[1])
	f.git(tree, "cherry-pick", commits[0])
	msg := f.git(tree, "log", "-1", "--format=%B")
	msg = strings.Replace(msg, "a: make line 10 safe", "a: line 10 is safe now", 1)
	f.git(tree, "commit", "-q", "--amend", "-m", msg)
	f.git(tree, "cherry-pick", commits[3], commits[4], commits[5])
	write(t, filepath.Join(tree, "f.c"), "new file\n")
	f.git(tree, "add", "f.c")
	f.git(tree, "commit", "-q", "-m", "f: a brand new patch")

	check, err := Export(context.Background(), f.g, ExportOptions{Tree: tree, Base: "v1", Dir: f.patches, Check: true})
	if err != nil {
		t.Fatal(err)
	}
	if !check.Changed {
		t.Fatal("export --check found nothing to change")
	}
	before := dirFiles(t, f.patches)
	if after := dirFiles(t, f.patches); len(after) != len(before) || after["series"] != before["series"] {
		t.Fatal("export --check wrote files")
	}
	res, err := Export(context.Background(), f.g, ExportOptions{Tree: tree, Base: "v1", Dir: f.patches})
	if err != nil {
		t.Fatal(err)
	}
	actions := map[string]string{}
	for _, fc := range res.Files {
		actions[fc.Name] = fc.Action
	}
	want := map[string]string{
		"0002-b-guard-line-20.patch":        Unchanged,
		"0001-a-make-line-10-safe.patch":    Updated, // new subject, same name
		"0003-new-add-a-helper-file.patch":  Deleted,
		"0004-c-per-thread-line-5.patch":    Unchanged,
		"0007-f-a-brand-new-patch.patch":    Created,
		"series":                            Updated,
		"0005-d-lock-line-30.patch":         Unchanged,
		"0006-e-drop-the-legacy-path.patch": Unchanged,
	}
	for name, a := range want {
		if actions[name] != a {
			t.Errorf("%s: action %q, want %q (all: %v)", name, actions[name], a, actions)
		}
	}
	series := read(t, filepath.Join(f.patches, "series"))
	if !strings.Contains(series, "0002-b-guard-line-20.patch\n0001-a-make-line-10-safe.patch\n0004") || !strings.HasSuffix(series, "0007-f-a-brand-new-patch.patch\n# retired: 0003\n") {
		t.Errorf("series:\n%s", series)
	}
	if _, err := os.Stat(filepath.Join(f.patches, "0003-new-add-a-helper-file.patch")); !os.IsNotExist(err) {
		t.Error("the dropped patch's file is still there")
	}
	if !strings.Contains(read(t, filepath.Join(f.patches, "0001-a-make-line-10-safe.patch")), "Subject: [PATCH] a: line 10 is safe now\n") {
		t.Error("0001 does not carry the new subject")
	}
	f.series() // still lints

	// Drop the new patch, add another: 0007 is retired, the newcomer gets 0008.
	f.git(tree, "reset", "-q", "--hard", "HEAD~1")
	write(t, filepath.Join(tree, "g.c"), "another\n")
	f.git(tree, "add", "g.c")
	f.git(tree, "commit", "-q", "-m", "g: another patch")
	if _, err := Export(context.Background(), f.g, ExportOptions{Tree: tree, Base: "v1", Dir: f.patches}); err != nil {
		t.Fatal(err)
	}
	series = read(t, filepath.Join(f.patches, "series"))
	if !strings.HasSuffix(series, "0008-g-another-patch.patch\n# retired: 0003 0007\n") {
		t.Errorf("series after a second new patch:\n%s", series)
	}
}

// TestExportFindsTheSeriesBase: in a clone that lacks the pinned upstream commit, export
// starts the series at the parent of the commit carrying the first entry's Series-Id
// (or, with no series file, the oldest of the Series-Id commits below HEAD), writes the
// same files, and says how it found the base; a base the user gave is never replaced.
func TestExportFindsTheSeriesBase(t *testing.T) {
	t.Parallel()
	f := newFixture(t, true)
	want := dirFiles(t, f.patches)
	tree := f.applyCommits()
	v1 := f.git(tree, "rev-parse", "v1^{commit}")
	const missing = "0123456789abcdef0123456789abcdef01234567"
	ctx := context.Background()

	res, err := Export(ctx, f.g, ExportOptions{Tree: tree, Base: missing, BaseIsPin: true, Dir: f.patches})
	if err != nil {
		t.Fatal(err)
	}
	if res.Base != v1 || res.Changed || !strings.Contains(res.BaseFound, "Series-Id 0001") {
		t.Errorf("export with a missing pin: base %s (%q), changed %v; want v1 %s, unchanged", res.Base, res.BaseFound, res.Changed, v1)
	}

	// A new commit on top (no Series-Id yet) and no series file: the run rule.
	f.edit(filepath.Join(tree, "a.c"), "a line 1", "a line 1 NEW")
	f.git(tree, "commit", "-q", "-am", "a: a new patch")
	fresh := filepath.Join(t.TempDir(), "fresh")
	res, err = Export(ctx, f.g, ExportOptions{Tree: tree, Base: missing, BaseIsPin: true, Dir: fresh})
	if err != nil {
		t.Fatal(err)
	}
	have := dirFiles(t, fresh)
	if res.Base != v1 || len(have) != len(want)+1 {
		t.Errorf("fresh export: base %s, %d files; want v1 %s and %d files", res.Base, len(have), v1, len(want)+1)
	}

	// The user's own --base is never second-guessed.
	if _, err := Export(ctx, f.g, ExportOptions{Tree: tree, Base: missing, Dir: f.patches, Check: true}); err == nil {
		t.Error("export --base MISSING succeeded")
	}
	// No Series-Id anywhere: refuse, naming --base.
	plain := f.clone("v1")
	_, err = Export(ctx, f.g, ExportOptions{Tree: plain, Base: missing, BaseIsPin: true, Dir: filepath.Join(t.TempDir(), "p")})
	if err == nil || !strings.Contains(err.Error(), "pass --base") || !strings.Contains(err.Error(), missing) {
		t.Errorf("export without Series-Id commits: err = %v, want one naming the pin and --base", err)
	}
}
