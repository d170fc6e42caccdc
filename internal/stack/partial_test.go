package stack

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestRebasePartialClone: in a blobless clone the base blobs a three-way merge needs are
// not there until asked for; git fetches them from the promisor remote on demand, and
// the rebase merges as in a full clone.
func TestRebasePartialClone(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	f.upstreamV2(func(p func(string) string) {
		f.edit(p("b.c"), "b line 18", "b line 18 upstream") // 0002 needs a 3-way merge
	})
	f.git(f.up, "config", "uploadpack.allowFilter", "true")
	f.git(f.up, "config", "uploadpack.allowAnySHA1InWant", "true")
	tree := filepath.Join(t.TempDir(), "partial")
	f.git(filepath.Dir(tree), "clone", "-q", "--filter=blob:none", "--no-checkout", "file://"+f.up, tree)
	f.git(tree, "checkout", "-q", "-b", DefaultBranch, "origin/dev")
	baseBlob := f.git(tree, "rev-parse", "v1:b.c")
	if missing := f.git(tree, "rev-list", "--objects", "--missing=print", "v1"); !strings.Contains(missing, "?"+baseBlob) {
		t.Fatalf("v1's b.c (%s) is already present; the test needs it missing:\n%s", baseBlob, missing)
	}
	res, err := Rebase(context.Background(), f.g, openRoot(t, tree), RebaseOptions{Tree: tree, Base: "v1", Onto: "v2", Intents: testIntents})
	if err != nil {
		t.Fatal(err)
	}
	if o := res.State.Outcomes[1]; o.Outcome != OutcomeMerged {
		t.Errorf("second patch: %s, want merged", o.Outcome)
	}
	b := read(t, filepath.Join(tree, "b.c"))
	if !strings.Contains(b, "b line 18 upstream\n") || !strings.Contains(b, "b line 20 GUARDED\n") {
		t.Errorf("b.c lacks one side of the merge:\n%s", b)
	}
}
