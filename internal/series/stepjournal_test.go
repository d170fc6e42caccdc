package series

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// TestStepJournalIsRecoveredNotForeign: rebase and apply --commit write each patch through
// the journal with their own op. A process killed inside that write phase leaves a journal
// that is mpspatch's own: status names the command that resolves it, and recovery, by
// whichever command, rolls the patch back (its commit was never made), never calling the
// journal foreign.
func TestStepJournalIsRecoveredNotForeign(t *testing.T) {
	for _, op := range []string{OpRebase, OpApplyCommit} {
		for _, dir := range []Direction{Forward, Reverse} {
			t.Run(op+"/"+dir.verb(), func(t *testing.T) {
				fx := newFixture(t, mpsBase, mpsSteps()...)
				s := mustLoad(t, fx.patches)
				root := openRoot(t, fx.repo)
				before := snapshot(t, fx.repo)
				plan, err := Compute(root, s, Forward)
				if err != nil {
					t.Fatal(err)
				}
				// Stop after the first file is written: the tree is half written.
				var stopped string
				func() {
					defer func() { _ = recover() }()
					_ = Commit(root, plan, op, "", CommitOptions{Crashpoint: func(step string) {
						if strings.HasPrefix(step, "wrote ") {
							stopped = step
							panic("crash")
						}
					}})
				}()
				if stopped == "" {
					t.Fatal("the write phase never reached a written file")
				}
				st, err := Inspect(root, s)
				if err != nil {
					t.Fatal(err)
				}
				in := st.Interrupted
				if in == nil || in.Foreign || !in.Committed || in.Op != op {
					t.Fatalf("after a crash at %q: interruption %+v, want op %q, committed, not foreign", stopped, in, op)
				}
				wantHint := "mpspatch rebase --continue"
				if op == OpApplyCommit {
					wantHint = "mpspatch apply --commit --force"
				}
				if !strings.Contains(in.Hint(), wantHint) {
					t.Errorf("hint %q does not name %q", in.Hint(), wantHint)
				}
				rec, err := Recover(root, dir)
				var je *JournalError
				if errors.As(err, &je) || err != nil {
					t.Fatalf("recover: %v", err)
				}
				if rec != "rolled back" {
					t.Errorf("recover did %q, want rolled back", rec)
				}
				if have := snapshot(t, fx.repo); !reflect.DeepEqual(have, before) {
					t.Fatalf("after recovery the tree is not as before the step:\n%s", mapDiff(have, before))
				}
			})
		}
	}
}

// TestJournalOpMustBeKnown: an authenticated journal with an op mpspatch never writes is
// refused as invalid.
func TestJournalOpMustBeKnown(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	for _, op := range []string{"", "rebase ", "APPLY", "merge"} {
		j := journal{Version: journalVersion, Op: op}
		if _, err := decodeJournal(mustEncode(t, j, key), key); err == nil || !strings.Contains(err.Error(), "want one of apply, unapply, rebase, apply --commit") {
			t.Errorf("op %q: have %v, want refused", op, err)
		}
	}
	for _, op := range journalOps {
		if _, err := decodeJournal(mustEncode(t, journal{Version: journalVersion, Op: op}, key), key); err != nil {
			t.Errorf("op %q: %v", op, err)
		}
	}
}
