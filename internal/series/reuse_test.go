package series

import (
	"errors"
	"fmt"
	"io/fs"
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
	}
	steps = append(steps,
		genStep{slug: "rename", msg: "rename b", edit: func(t testing.TB, dir string) { git(t, dir, "mv", "b.txt", "c.txt") }},
		editLine("c1", "c.txt", 10, "c-one"),
		editLine("c2", "c.txt", 30, "c-two-longer"),
		editLine("a9", "a.txt", 199, "last but one"),
	)
	fx := newFixture(t, base, steps...)
	s := mustLoad(t, fx.patches)
	n := len(s.Patches)

	// What each patch leaves, by git: the commit n-1-i commits below the tip.
	want := make([]map[string]string, n)
	for i := range n {
		rev := fmt.Sprintf("main~%d", n-1-i)
		want[i] = map[string]string{}
		for _, f := range []string{"a.txt", "b.txt", "c.txt"} {
			if have := git(t, fx.repo, "ls-tree", "--name-only", rev, f); strings.TrimSpace(have) == f {
				want[i][f] = git(t, fx.repo, "show", rev+":"+f)
			}
		}
	}

	root := openRoot(t, fx.repo)
	i := 0
	_, plan, err := InspectAndCompute(root, s, func(p *Patch, read func(string) ([]byte, error)) {
		for _, f := range []string{"a.txt", "b.txt", "c.txt"} {
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
		if final[f] != w {
			t.Errorf("plan's %s differs from git's", f)
		}
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
