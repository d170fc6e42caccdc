package series

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The computer reuses a file's buffers across the patches of a series (image.spare).
// These tests pin down what that must never change: every patch sees and leaves the
// content git gives, readers called between patches see the content as of that patch,
// and a conflict's report keeps the lines it quoted although the buffer they came from is
// written again by later patches.

// editLine returns a step that replaces line n of name by text.
func editLine(slug, name string, n int, text string) genStep {
	return genStep{slug: slug, msg: slug, edit: func(t testing.TB, dir string) {
		replaceIn(t, dir, name, fmt.Sprintf("line %d\n", n), text+"\n")
	}}
}

// deleteLines returns a step that deletes lines from..to of name.
func deleteLines(slug, name string, from, to int) genStep {
	return genStep{slug: slug, msg: slug, edit: func(t testing.TB, dir string) {
		for n := from; n <= to; n++ {
			replaceIn(t, dir, name, fmt.Sprintf("line %d\n", n), "")
		}
	}}
}

func TestComputeWithReusedBuffersMatchesGit(t *testing.T) {
	base := map[string]string{
		"a.txt": lines(200, func(i int) string { return fmt.Sprintf("line %d", i) }),
		"b.txt": lines(50, func(i int) string { return fmt.Sprintf("line %d", i) }),
	}
	var steps []genStep
	for k := 1; k <= 8; k++ {
		// Lines of growing length, so that a stale buffer's bytes would show.
		steps = append(steps, editLine(fmt.Sprintf("a%d", k), "a.txt", 20*k, strings.Repeat("x", 10*k)))
		if k == 2 {
			// A patch that changes only the mode leaves the content (and its buffer) as
			// it was: the buffers must still alternate, never coincide, afterwards.
			steps = append(steps, genStep{slug: "mode", msg: "mode", edit: func(t testing.TB, dir string) {
				if err := os.Chmod(filepath.Join(dir, "a.txt"), 0o755); err != nil {
					t.Fatal(err)
				}
			}})
		}
	}
	steps = append(steps,
		genStep{slug: "rename", msg: "rename b", edit: func(t testing.TB, dir string) { git(t, dir, "mv", "b.txt", "c.txt") }},
		editLine("c1", "c.txt", 10, "c-one"),
		editLine("c2", "c.txt", 30, "c-two-longer"),
		editLine("a9", "a.txt", 199, "last but one"),
	)
	computeMatchesGit(t, base, steps, []string{"a.txt", "b.txt", "c.txt"})
}

// computeMatchesGit makes a series of steps with git and checks that compute, with its
// reused buffers, gives every named file git's content after each patch (as a reader
// between patches sees it) and in the final plan.
func computeMatchesGit(t *testing.T, base map[string]string, steps []genStep, names []string) {
	t.Helper()
	fx := newFixture(t, base, steps...)
	s := mustLoad(t, fx.patches)
	n := len(s.Patches)

	// What each patch leaves, by git: the commit n-1-i commits below the tip.
	want := make([]map[string]string, n)
	for i := range n {
		rev := fmt.Sprintf("main~%d", n-1-i)
		want[i] = map[string]string{}
		for _, f := range names {
			if have := git(t, fx.repo, "ls-tree", "--name-only", rev, f); strings.TrimSpace(have) == f {
				want[i][f] = git(t, fx.repo, "show", rev+":"+f)
			}
		}
	}

	root := openRoot(t, fx.repo)
	i := 0
	_, plan, err := InspectAndCompute(root, s, func(p *Patch, read func(string) ([]byte, error)) {
		for _, f := range names {
			data, err := read(f)
			w, exists := want[i][f]
			switch {
			case !exists && !errors.Is(err, fs.ErrNotExist):
				t.Errorf("after %s: %s reads %q, %v; want it gone", p.Name, f, data, err)
			case exists && (err != nil || string(data) != w):
				t.Errorf("after %s: %s differs from git's (%v)", p.Name, f, err)
			}
		}
		i++
	})
	if err != nil {
		t.Fatal(err)
	}
	if i != n {
		t.Fatalf("reader called after %d patches, want %d", i, n)
	}
	final := map[string]string{}
	for _, ch := range plan.Changes {
		if ch.NewExists {
			final[ch.Path] = string(ch.NewData)
		}
	}
	for f, w := range want[n-1] {
		have, changed := final[f]
		if !changed {
			have = base[f] // the plan lists only what differs from the tree
		}
		if have != w {
			t.Errorf("plan's %s differs from git's", f)
		}
	}
}

// TestComputeReuseRandomSequences runs seeded random series of edits, mode changes,
// renames, deletions and re-creations of two files through computeMatchesGit: the
// sequences in which buffers change hands are where reuse could let two images, or an
// image and its spare, share memory.
func TestComputeReuseRandomSequences(t *testing.T) {
	rng := rand.New(rand.NewSource(11))
	names := []string{"a.txt", "b.txt"}
	for seq := range 6 {
		t.Run(fmt.Sprint(seq), func(t *testing.T) {
			base := map[string]string{}
			for _, f := range names {
				base[f] = lines(40+rng.Intn(80), func(i int) string { return fmt.Sprintf("%s line %d", f, i) })
			}
			exists := map[string]bool{"a.txt": true, "b.txt": true}
			var steps []genStep
			for k := range 10 + rng.Intn(6) {
				f, other := names[rng.Intn(2)], ""
				if f == names[0] {
					other = names[1]
				} else {
					other = names[0]
				}
				slug := fmt.Sprintf("s%d", k)
				n, text := rng.Intn(1000), strings.Repeat(fmt.Sprintf("%d ", k), 1+rng.Intn(30))
				switch op := rng.Intn(10); {
				case !exists[f]:
					exists[f] = true
					steps = append(steps, genStep{slug: slug, msg: "create " + f, edit: func(t testing.TB, dir string) {
						writeFiles(t, dir, map[string]string{f: lines(10+n%50, func(i int) string { return fmt.Sprintf("new %d %s", i, text) })})
					}})
				case op < 6:
					steps = append(steps, genStep{slug: slug, msg: "edit " + f, edit: func(t testing.TB, dir string) {
						p := filepath.Join(dir, f)
						data, err := os.ReadFile(p)
						if err != nil {
							t.Fatal(err)
						}
						ls := strings.SplitAfter(string(data), "\n")
						ls[n%(len(ls)-1)] = text + "\n"
						if err := os.WriteFile(p, []byte(strings.Join(ls, "")), 0o644); err != nil {
							t.Fatal(err)
						}
					}})
				case op < 8:
					steps = append(steps, genStep{slug: slug, msg: "mode " + f, edit: func(t testing.TB, dir string) {
						p := filepath.Join(dir, f)
						fi, err := os.Stat(p)
						if err != nil {
							t.Fatal(err)
						}
						if err := os.Chmod(p, fi.Mode()^0o111); err != nil {
							t.Fatal(err)
						}
					}})
				case op < 9 && !exists[other]:
					exists[f], exists[other] = false, true
					steps = append(steps, genStep{slug: slug, msg: "rename " + f, edit: func(t testing.TB, dir string) { git(t, dir, "mv", f, other) }})
				case op < 9:
					steps = append(steps, genStep{slug: slug, msg: "edit " + f + " at the end", edit: func(t testing.TB, dir string) {
						p := filepath.Join(dir, f)
						data, err := os.ReadFile(p)
						if err != nil {
							t.Fatal(err)
						}
						if err := os.WriteFile(p, append(data, text+"\n"...), 0o644); err != nil {
							t.Fatal(err)
						}
					}})
				default:
					exists[f] = false
					steps = append(steps, genStep{slug: slug, msg: "delete " + f, edit: func(t testing.TB, dir string) { git(t, dir, "rm", "-q", f) }})
				}
			}
			computeMatchesGit(t, base, steps, names)
		})
	}
}

func TestConflictReportSurvivesBufferReuse(t *testing.T) {
	base := map[string]string{"a.txt": lines(100, func(i int) string { return fmt.Sprintf("line %d", i) })}
	fx := newFixture(t, base,
		editLine("p1", "a.txt", 5, "one"),
		editLine("p2", "a.txt", 10, "two"),
		editLine("p3", "a.txt", 80, "three"), // conflicts: the tree's line 80 differs
		// Patches 4 and 5 shrink the file, so that their output, written over the buffer
		// patch 3's report quoted, moves other lines to where "edited 80" was.
		deleteLines("p4", "a.txt", 11, 19),
		deleteLines("p5", "a.txt", 21, 29),
	)
	replaceIn(t, fx.repo, "a.txt", "line 80\n", "edited 80\n")
	s := mustLoad(t, fx.patches)
	plan, err := ComputePatches(openRoot(t, fx.repo), s.Patches, Forward)
	var ce *ConflictError
	if !errors.As(err, &ce) || len(ce.Conflicts) != 1 {
		t.Fatalf("have %v, want one conflict", err)
	}
	c := ce.Conflicts[0]
	if c.Patch != "0003-p3.patch" {
		t.Fatalf("conflict in %s, want 0003-p3.patch", c.Patch)
	}
	// The report quotes the tree as patches 1 and 2 left it, around line 80; patches 4 and
	// 5 were computed afterwards, in buffers that held those lines.
	if got, want := strings.Join(c.Found, ""), "line 77\nline 78\nline 79\nedited 80\nline 81\nline 82\nline 83\n"; got != want {
		t.Errorf("conflict quotes %q, want %q", got, want)
	}
	if plan.Results[4].Outcome() == "conflict" {
		t.Errorf("0005 should apply: its context is untouched by the conflict")
	}
}
