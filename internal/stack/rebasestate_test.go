package stack

import (
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/mpspatch/mpspatch/internal/statekey"
)

var (
	testStateKey = []byte("0123456789abcdef0123456789abcdef")
	testGitDir   = "/repo/.git"
)

const (
	shaA = "1111111111111111111111111111111111111111"
	shaB = "2222222222222222222222222222222222222222"
	shaC = "3333333333333333333333333333333333333333"
	shaD = "4444444444444444444444444444444444444444"
	shaE = "5555555555555555555555555555555555555555"
)

// validState is a rebase of two patches stopped at the second: the first one applied.
func validState() *RebaseState {
	return &RebaseState{
		Version: stateVersion, GitDir: testGitDir, Tree: "/repo", Branch: "mpspatch/series",
		OrigHead: shaA, Base: shaB, Onto: shaC, OntoName: "v2", Commits: []string{shaD, shaA},
		IDs: []int{1, 2}, Names: []string{"0001-one", "0002-two"}, Next: 1, Head: shaE, Phase: phaseStopped,
		Stopped:  &Stop{Index: 1, Patch: "0002-two", Reason: "conflict", Files: []string{"a.c"}},
		Outcomes: []PatchOutcome{{ID: 1, Name: "0001-one", Subject: "one", Outcome: OutcomeClean, OldCommit: shaD, NewCommit: shaE}},
	}
}

func TestRebaseStateRoundTrip(t *testing.T) {
	st := validState()
	data, err := encodeState(st, testStateKey)
	if err != nil {
		t.Fatal(err)
	}
	back, err := decodeState(data, testStateKey, "state.json", testGitDir)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, st) {
		t.Errorf("have %+v\nwant %+v", back, st)
	}
	if _, err := decodeState(data, []byte("another key, 32 bytes long......"), "state.json", testGitDir); !errors.Is(err, ErrBadState) {
		t.Errorf("another user's key: have %v, want refused", err)
	}
}

// TestRebaseStateFields: each field a rebase relies on is checked, and the refusal names
// the field.
func TestRebaseStateFields(t *testing.T) {
	tests := []struct {
		field  string
		change func(*RebaseState)
	}{
		{"version", func(s *RebaseState) { s.Version = 3 }},
		{"git_dir", func(s *RebaseState) { s.GitDir = "/other/.git" }},
		{"git_dir", func(s *RebaseState) { s.GitDir = "repo/.git" }},
		{"branch", func(s *RebaseState) { s.Branch = "-f" }},
		{"branch", func(s *RebaseState) { s.Branch = "a..b" }},
		{"branch", func(s *RebaseState) { s.Branch = "" }},
		{"orig_head", func(s *RebaseState) { s.OrigHead = "HEAD" }},
		{"base", func(s *RebaseState) { s.Base = strings.Repeat("A", 40) }},
		{"onto", func(s *RebaseState) { s.Onto = shaC + "00" }},
		{"onto_name", func(s *RebaseState) { s.OntoName = "v2\n" }},
		{"onto_name", func(s *RebaseState) { s.OntoName = "" }},
		{"ids", func(s *RebaseState) { s.IDs = s.IDs[:1] }},
		{"names", func(s *RebaseState) { s.Names = nil }},
		{"commits[1]", func(s *RebaseState) { s.Commits[1] = shaD }},
		{"ids[0]", func(s *RebaseState) { s.IDs[0] = 10000 }},
		{"names[1]", func(s *RebaseState) { s.Names[1] = "../x" }},
		{"names[1]", func(s *RebaseState) { s.Names[1] = "\x1b[31m" }},
		{"next", func(s *RebaseState) { s.Next = -1 }},
		{"next", func(s *RebaseState) { s.Next = 3 }},
		{"phase", func(s *RebaseState) { s.Phase = "done" }},
		{"phase", func(s *RebaseState) { s.Phase = phaseFinishing }},
		{"stopped", func(s *RebaseState) { s.Stopped = nil }},
		{"stopped.index", func(s *RebaseState) { s.Stopped.Index = 0 }},
		{"stopped.patch", func(s *RebaseState) { s.Stopped.Patch = "0001-one" }},
		{"stopped.reason", func(s *RebaseState) { s.Stopped.Reason = "other" }},
		{"outcomes", func(s *RebaseState) { s.Outcomes = nil }},
		{"resume", func(s *RebaseState) { s.Resume = map[string]string{"upload_pack": "x"} }},
		{"resume.patches", func(s *RebaseState) { s.Resume = map[string]string{"patches": "/p\n--x"} }},
		{"outcomes[0].old_commit", func(s *RebaseState) { s.Outcomes[0].OldCommit = shaA }},
		{"outcomes[0].id", func(s *RebaseState) { s.Outcomes[0].ID = 7 }},
		{"outcomes[0].outcome", func(s *RebaseState) { s.Outcomes[0].Outcome = "magic" }},
		{"outcomes[0].new_commit", func(s *RebaseState) { s.Outcomes[0].NewCommit = "" }},
		{"outcomes[0].new_commit", func(s *RebaseState) { s.Outcomes[0].Outcome = OutcomeSkipped }},
		{"outcomes[0].renamed", func(s *RebaseState) { s.Outcomes[0].Renamed = []string{""} }},
		{"head", func(s *RebaseState) { s.Head = shaC }},
	}
	for _, tt := range tests {
		st := validState()
		tt.change(st)
		data, err := encodeState(st, testStateKey)
		if err != nil {
			t.Fatal(err)
		}
		_, err = decodeState(data, testStateKey, "/repo/.git/mpspatch-rebase/state.json", testGitDir)
		var se *StateError
		if !errors.As(err, &se) || se.Field != tt.field || !errors.Is(err, ErrBadState) {
			t.Errorf("%s: have %v, want a *StateError for the field", tt.field, err)
			continue
		}
		if !strings.HasPrefix(err.Error(), "rebase state /repo/.git/mpspatch-rebase/state.json: "+tt.field+": ") {
			t.Errorf("%s: message %q does not name the file and the field", tt.field, err)
		}
	}
}

// TestSaveRefusesAStateThatWouldNotReadBack: the reader's checks run before a write, so a
// rebase never leaves a state that --continue and --abort would refuse.
func TestSaveRefusesAStateThatWouldNotReadBack(t *testing.T) {
	dir := filepath.Join(t.TempDir(), stateDirName)
	st := validState()
	st.Names[0] = "bad/name"
	r := &rebaser{gitDir: testGitDir, dir: dir, key: testStateKey, st: st}
	if err := r.save(); err == nil || !strings.Contains(err.Error(), "names[0]") {
		t.Fatalf("have %v, want the save refused naming names[0]", err)
	}
	if _, err := os.Lstat(filepath.Join(dir, stateFileName)); err == nil {
		t.Error("the refused state was written")
	}
}

// FuzzDecodeRebaseState feeds the state reader arbitrary bytes, raw (the MAC check) and
// signed with the key (every check after it). It must never panic, and a state it accepts
// must be usable as a rebase uses it and survive a write and a read.
func FuzzDecodeRebaseState(f *testing.F) {
	good, _ := encodeState(validState(), testStateKey)
	f.Add(good, true)
	_, body, _ := strings.Cut(string(good), "\n")
	f.Add([]byte(body), false)
	for _, change := range []string{`"next": 1`, `"next": -1`, `"next": 99`, `"phase": "finishing"`, `"outcomes": null`, `"branch": "--x"`} {
		f.Add([]byte(strings.Replace(body, `"next": 1`, change, 1)), false)
	}
	f.Fuzz(func(t *testing.T, data []byte, raw bool) {
		if !raw {
			data = signBody(data)
		}
		st, err := decodeState(data, testStateKey, "state.json", testGitDir)
		if err != nil {
			if !errors.Is(err, ErrBadState) {
				t.Fatalf("refusal %v is not a *StateError", err)
			}
			return
		}
		// What the rebase does with a state it read.
		for i := 0; i < st.Next; i++ {
			_ = st.Outcomes[i].OldCommit + st.Commits[i] + st.Names[i]
		}
		if st.Next < len(st.Commits) {
			_ = st.Names[st.Next] + st.Commits[st.Next]
		}
		if st.Stopped != nil {
			_ = st.Names[st.Stopped.Index]
		}
		again, err := encodeState(st, testStateKey)
		if err != nil {
			t.Fatal(err)
		}
		back, err := decodeState(again, testStateKey, "state.json", testGitDir)
		if err != nil || !reflect.DeepEqual(back, st) {
			t.Fatalf("an accepted state does not survive a write and a read: %v", err)
		}
	})
}

// signBody makes a state file of an arbitrary body, signed as encodeState signs one.
func signBody(body []byte) []byte {
	mac := statekey.MAC(testStateKey, stateDomain, body)
	return append([]byte(stateMagic+hex.EncodeToString(mac)+"\n"), body...)
}
