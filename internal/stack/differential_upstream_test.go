package stack

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/mpspatch/mpspatch/internal/series"
	"github.com/mpspatch/mpspatch/internal/upstream"
)

// TestDifferentialCheckUpstream compares `check --upstream` (upstream.Cache.Check, as the
// command runs it) with a checkout plus `git apply` over cells of this repository's own
// history: series made of short runs of its commits (format-patch, then import), checked
// at tags set on older and newer commits of a file:// upstream made from this clone,
// mpspatch running under the hostile user config. For each tag, git takes the patches in
// order on a checkout of the tag, as apply would: `git apply --index` (exact, or offset by
// the largest hunk offset git reports), else a file it changes missing, else `git apply
// -R --check` (absorbed), else `git apply --3way` (3-way needed, else conflict); a patch
// that applies or merges stays for the ones after it. Each cell must agree, offsets and
// the failing file included. docs/authoring.md reports the tally.
func TestDifferentialCheckUpstream(t *testing.T) {
	if testing.Short() {
		t.Skip("checks real history at 60 tags")
	}
	top, runs := ownHistory(t)
	e, clone := diffEnv(t, top)
	plain := newEnv(t, false)
	ctx := context.Background()

	// The upstream: a bare copy of this clone, served over file:// by git itself, which
	// lets the cache fetch only the commits and blobs it asks for.
	served := filepath.Join(t.TempDir(), "upstream.git")
	e.git(filepath.Dir(served), "clone", "-q", "--bare", "--no-tags", top, served)
	e.git(served, "config", "uploadpack.allowFilter", "true")
	e.git(served, "config", "uploadpack.allowAnySHA1InWant", "true")
	url := "file://" + served
	cache := &upstream.Cache{Dir: t.TempDir(), Git: e.g}

	chain := strings.Fields(e.git(top, "rev-list", "--first-parent", "--reverse", "HEAD"))
	chainIndex := map[string]int{}
	for i, c := range chain {
		chainIndex[c] = i
	}
	rng := rand.New(rand.NewPCG(20, 2))
	const ranges = 10
	tally := map[upstream.Outcome]int{}
	var cells, disagree int
	for k := 0; k < ranges; k++ {
		run := runs[rng.IntN(len(runs))]
		if len(run) < 12 {
			k--
			continue
		}
		n := 1 + rng.IntN(4)
		i := 1 + rng.IntN(len(run)-n-1) // base run[i], series run[i+1..i+n]
		base, head := run[i], run[i+n]
		label := fmt.Sprintf("range %d: %.8s..%.8s", k, base, head)

		// The refs: the base itself, older commits near and far (the series moves over
		// their changes) and newer ones (upstream moved on, or holds the series already),
		// along the first-parent chain.
		at := chainIndex[base]
		hat := chainIndex[head]
		var refs, commits []string
		for j, c := range []string{base, chain[max(0, at-1-rng.IntN(3))], chain[max(0, at-5-rng.IntN(20))],
			chain[max(0, at-25-rng.IntN(60))], chain[min(len(chain)-1, hat+1+rng.IntN(5))], chain[min(len(chain)-1, hat+6+rng.IntN(30))]} {
			tag := fmt.Sprintf("dt-%d-%d", k, j)
			e.git(served, "tag", tag, c)
			refs, commits = append(refs, tag), append(commits, c)
		}

		mails := filepath.Join(t.TempDir(), "mails")
		plain.git(top, "format-patch", "-q", "--full-index", "-o", mails, base+".."+head)
		dir := filepath.Join(t.TempDir(), "patches")
		if _, err := Import(ctx, ImportOptions{Src: mails, Dir: dir}); err != nil {
			t.Errorf("%s: import: %v", label, err)
			continue
		}
		s, err := series.Load(os.DirFS(dir), ".", dir)
		if err != nil {
			t.Errorf("%s: load: %v", label, err)
			continue
		}
		rep, err := cache.Check(ctx, upstream.CheckOptions{URL: url, Refs: refs, Base: base, Series: s})
		if err != nil {
			t.Fatalf("%s: check --upstream: %v", label, err)
		}
		if len(rep.Columns) != len(refs) {
			t.Fatalf("%s: %d columns for %d refs", label, len(rep.Columns), len(refs))
		}
		for j, col := range rep.Columns {
			if col.Commit != commits[j] {
				t.Errorf("%s: %s resolved to %.12s, tagged %.12s", label, refs[j], col.Commit, commits[j])
				continue
			}
			want := gitCells(t, e, clone, commits[j], s.Patches)
			for p, have := range col.Cells {
				cells++
				w := want[p]
				if have.Outcome != w.Outcome || have.Offset != w.Offset || (w.File != "" && have.File != w.File) {
					disagree++
					t.Errorf("%s at %s (%.8s), %s: check --upstream says %s (%s), git %s (%s)", label, refs[j], commits[j], s.Patches[p].Name, have, have.File, w, w.File)
					continue
				}
				tally[w.Outcome]++
			}
		}
	}
	var parts []string
	for _, o := range []upstream.Outcome{upstream.Exact, upstream.Offset, upstream.ThreeWay, upstream.Absorbed, upstream.Conflict, upstream.Missing} {
		parts = append(parts, fmt.Sprintf("%d %s", tally[o], o))
	}
	t.Logf("check --upstream vs checkout + git apply on this repository's history: %d ranges, %d ref x patch cells, %d agree (%s), %d disagreements", ranges, cells, cells-disagree, strings.Join(parts, ", "), disagree)
	if tally[upstream.Exact] == 0 || tally[upstream.Offset] == 0 || tally[upstream.Exact]+tally[upstream.Offset] == cells-disagree {
		t.Errorf("the cells do not cover applying, applying at an offset and not applying: they prove little")
	}
}

var (
	gitOffsetRE = regexp.MustCompile(`(?m)^Hunk #\d+ succeeded at \d+ \(offset (-?\d+) lines?\)`)
	// git's first complaint names the file: a hunk that failed, or a file to create
	// that is there already.
	gitFailedRE = regexp.MustCompile(`(?m)^error: (?:patch failed: (.*):\d+|(.*): already exists in (?:working directory|index))$`)
)

// gitCells is what git says of each patch at commit: a checkout and git apply, the
// patches taken in order, pinned against the hostile config's apply.whitespace.
func gitCells(t *testing.T, e *env, clone, commit string, patches []*series.Patch) []upstream.Cell {
	t.Helper()
	reset(e, clone, commit)
	apply := func(p *series.Patch, args ...string) (string, error) {
		cmd := exec.Command("git", append([]string{"apply", "--whitespace=nowarn"}, args...)...)
		cmd.Dir, cmd.Env, cmd.Stdin = clone, e.vars, bytes.NewReader(p.Raw)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	keep := func() { e.git(clone, "commit", "-q", "--no-verify", "--allow-empty", "-m", "applied") }
	cells := make([]upstream.Cell, len(patches))
	for i, p := range patches {
		out, err := apply(p, "--index", "-v")
		if err == nil {
			off := 0
			for _, m := range gitOffsetRE.FindAllStringSubmatch(out, -1) {
				o, _ := strconv.Atoi(m[1])
				off = max(off, o, -o)
			}
			cells[i] = upstream.Cell{Outcome: upstream.Exact}
			if off > 0 {
				cells[i] = upstream.Cell{Outcome: upstream.Offset, Offset: off}
			}
			keep()
			continue
		}
		missing := ""
		for _, f := range p.Files {
			if f.IsNew || f.OldName == "" {
				continue
			}
			if _, err := os.Lstat(filepath.Join(clone, f.OldName)); err != nil && missing == "" {
				missing = f.OldName
			}
		}
		if missing != "" {
			cells[i] = upstream.Cell{Outcome: upstream.Missing, File: missing}
			continue
		}
		if _, err := apply(p, "-R", "--check"); err == nil {
			cells[i] = upstream.Cell{Outcome: upstream.Absorbed}
			continue
		}
		failed := ""
		if m := gitFailedRE.FindStringSubmatch(out); m != nil {
			failed = m[1] + m[2]
		}
		if _, err := apply(p, "--3way"); err == nil {
			cells[i] = upstream.Cell{Outcome: upstream.ThreeWay}
			keep()
			continue
		}
		e.git(clone, "reset", "-q", "--hard", "HEAD")
		e.git(clone, "clean", "-q", "-fdx")
		cells[i] = upstream.Cell{Outcome: upstream.Conflict, File: failed}
	}
	return cells
}
