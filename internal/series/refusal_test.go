package series

import (
	"strings"
	"testing"
)

// A refusal names what the files hold, not only the tree's summary state.
func TestStateErrorNamesTheCause(t *testing.T) {
	t.Parallel()
	f := func(path string, version, steps int, edited bool) FileStatus {
		return FileStatus{Path: path, Version: version, Steps: steps, Exists: true, Edited: edited}
	}
	tests := []struct {
		name  string
		files []FileStatus
		want  string
	}{
		{"neither side", []FileStatus{f("a.mm", -1, 1, false), f("b.mm", -1, 1, false), f("c.mm", -1, 2, false), f("d.h", 0, 1, false)},
			"apply: 3 files differ from both the base and the patched content: a.mm, b.mm, c.mm; refusing to write"},
		{"one file neither", []FileStatus{f("a.mm", -1, 1, false)},
			"apply: 1 file differs from both the base and the patched content: a.mm; refusing to write"},
		{"half-patched file", []FileStatus{f("a.mm", 1, 3, false)},
			"apply: 1 file holds only some of the patches that touch it: a.mm; refusing to write"},
		{"partly patched tree", []FileStatus{f("a.mm", 1, 1, false), f("b.mm", 0, 1, false)},
			"apply: the tree is partly patched: 1 file is already patched, 1 file is at the base: a.mm; refusing to write"},
		{"local edits", []FileStatus{f("a", 0, 1, true), f("b", 0, 1, true), f("c", 0, 1, true), f("d", 0, 1, true), f("e", 0, 1, false)},
			"apply: 4 files carry local edits on top of the recorded content: a, b, c and 1 more; refusing to write"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := &StateError{Verb: "apply", Status: &TreeStatus{Files: tt.files}}
			if have, _, _ := strings.Cut(err.Error(), "\n"); have != tt.want {
				t.Errorf("have %q\nwant %q", have, tt.want)
			}
		})
	}
}
