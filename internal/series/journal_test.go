package series

import (
	"encoding/hex"
	"errors"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"github.com/mpspatch/mpspatch/internal/statekey"
)

func TestApplyWithFsync(t *testing.T) {
	fx := newFixture(t, mpsBase, mpsSteps()...)
	s := mustLoad(t, fx.patches)
	want := patchedSnapshot(t, fx)
	if _, err := Apply(openRoot(t, fx.repo), s, Options{Fsync: true}); err != nil {
		t.Fatal(err)
	}
	if have := snapshot(t, fx.repo); !reflect.DeepEqual(have, want) {
		t.Errorf("apply --fsync differs from git's tip:\n%s", mapDiff(have, want))
	}
}

func TestJournalRoundTripAndCorruption(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	j := journal{Version: journalVersion, Op: "apply", Entries: []journalEntry{
		{Path: "a/b.mm", Old: fileState{Exists: true, Mode: 0o600, Content: []byte("one\n")}, New: fileState{Exists: true, Mode: 0o644, Content: []byte("one\ntwo\n")}},
		{Path: "gone.txt", Old: fileState{Exists: true, Mode: 0o644, Content: []byte("x")}},
		{Path: "empty.h", New: fileState{Exists: true, Mode: 0o755, Content: []byte{}}},
	}}
	data, err := encodeJournal(j, key)
	if err != nil {
		t.Fatal(err)
	}
	back, err := decodeJournal(data, key)
	if err != nil {
		t.Fatal(err)
	}
	for i := range j.Entries {
		h, w := back.Entries[i], j.Entries[i]
		if h.Path != w.Path || h.Old.Exists != w.Old.Exists || h.New.Exists != w.New.Exists || h.Old.Mode != w.Old.Mode ||
			h.New.Mode != w.New.Mode || string(h.Old.Content) != string(w.Old.Content) || string(h.New.Content) != string(w.New.Content) {
			t.Errorf("entry %d: have %+v, want %+v", i, h, w)
		}
	}
	// resign re-MACs a tampered body, as mpspatch itself would have written it: the
	// checks on the entries must hold even for a journal that authenticates.
	resign := func(body string) []byte {
		return []byte(journalMagic + hex.EncodeToString(statekey.MAC(key, journalDomain, []byte(body))) + "\n" + body)
	}
	for name, bad := range map[string][]byte{
		"truncated":        data[:len(data)-3],
		"trailing":         append(append([]byte{}, data...), 'x'),
		"no header":        []byte("{"),
		"bad json":         []byte("{nope}\n"),
		"v2 journal":       []byte(`{"version":2,"op":"apply","entries":[]}` + "\n"),
		"other key":        mustEncode(t, j, []byte("fedcba9876543210fedcba9876543210")),
		"resigned v2":      resign(`{"version":2,"op":"apply","entries":[]}` + "\n"),
		"entry in .git":    resign(`{"version":4,"op":"apply","entries":[{"path":".git/hooks/post-checkout","new":{"exists":true,"mode":493,"size":2}}]}` + "\nhi"),
		"entry .GIT.":      resign(`{"version":4,"op":"apply","entries":[{"path":"a/.GIT./config","new":{"exists":true,"mode":420,"size":2}}]}` + "\nhi"),
		"entry escaping":   resign(`{"version":4,"op":"apply","entries":[{"path":"../x","new":{"exists":true,"mode":420,"size":2}}]}` + "\nhi"),
		"entry absolute":   resign(`{"version":4,"op":"apply","entries":[{"path":"/tmp/x","new":{"exists":true,"mode":420,"size":2}}]}` + "\nhi"),
		"entry in state":   resign(`{"version":4,"op":"apply","entries":[{"path":".mpspatch/journal.json","new":{"exists":true,"mode":420,"size":2}}]}` + "\nhi"),
		"setuid mode":      resign(`{"version":4,"op":"apply","entries":[{"path":"x","new":{"exists":true,"mode":2541,"size":2}}]}` + "\nhi"),
		"world writable":   resign(`{"version":4,"op":"apply","entries":[{"path":"x","new":{"exists":true,"mode":511,"size":2}}]}` + "\nhi"),
		"duplicate path":   resign(`{"version":4,"op":"apply","entries":[{"path":"x"},{"path":"x"}]}` + "\n"),
		"unknown op":       resign(`{"version":4,"op":"rm","entries":[]}` + "\n"),
		"unknown field":    resign(`{"version":4,"op":"apply","entries":[],"exec":"sh"}` + "\n"),
		"negative size":    resign(`{"version":4,"op":"apply","entries":[{"path":"x","new":{"exists":true,"mode":420,"size":-1}}]}` + "\n"),
		"content, absent":  resign(`{"version":4,"op":"apply","entries":[{"path":"x","new":{"size":2}}]}` + "\nhi"),
		"linked new":       resign(`{"version":4,"op":"apply","entries":[{"path":"x","new":{"exists":true,"mode":420,"linked":true,"blob":"` + BlobID(nil) + `"}}]}` + "\n"),
		"linked, no blob":  resign(`{"version":4,"op":"apply","entries":[{"path":"x","old":{"exists":true,"mode":420,"linked":true}}]}` + "\n"),
		"linked, bad blob": resign(`{"version":4,"op":"apply","entries":[{"path":"x","old":{"exists":true,"mode":420,"linked":true,"blob":"../../etc/passwd"}}]}` + "\n"),
		"linked, absent":   resign(`{"version":4,"op":"apply","entries":[{"path":"x","old":{"linked":true,"blob":"` + BlobID(nil) + `"}}]}` + "\n"),
		"linked, content":  resign(`{"version":4,"op":"apply","entries":[{"path":"x","old":{"exists":true,"mode":420,"size":2,"linked":true,"blob":"` + BlobID([]byte("hi")) + `"}}]}` + "\nhi"),
		"blob, unlinked":   resign(`{"version":4,"op":"apply","entries":[{"path":"x","old":{"exists":true,"mode":420,"size":2,"blob":"` + BlobID([]byte("hi")) + `"}}]}` + "\nhi"),
	} {
		if _, err := decodeJournal(bad, key); err == nil {
			t.Errorf("%s: decoded a corrupt or hostile journal", name)
		}
	}
}

func mustEncode(t *testing.T, j journal, key []byte) []byte {
	t.Helper()
	data, err := encodeJournal(j, key)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestForeignJournalIsNeverReplayed(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{journalFile: "garbage"})
	before := snapshot(t, dir)
	_, err := Recover(openRoot(t, dir), Forward)
	var je *JournalError
	if !errors.As(err, &je) || !je.Interruption.Foreign || !strings.Contains(err.Error(), "never replayed") {
		t.Fatalf("have %v, want a *JournalError that calls the journal foreign", err)
	}
	if have := snapshot(t, dir); !reflect.DeepEqual(have, before) {
		t.Fatalf("a refused recovery wrote:\n%s", mapDiff(have, before))
	}
}

func TestLinkedJournalRoundTrip(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	j := journal{Version: journalVersion, Op: "unapply", Entries: []journalEntry{
		{Path: "a/b.mm", Old: fileState{Exists: true, Mode: 0o644, Linked: true, Blob: BlobID([]byte("one\n"))}, New: fileState{Exists: true, Mode: 0o644, Content: []byte("two\n")}},
		{Path: "c.h", Old: fileState{Exists: true, Mode: 0o600, Content: []byte("kept inline\n")}, New: fileState{Exists: true, Mode: 0o644, Content: []byte("three\n")}},
	}}
	back, err := decodeJournal(mustEncode(t, j, key), key)
	if err != nil {
		t.Fatal(err)
	}
	a, c := back.Entries[0], back.Entries[1]
	if !a.Old.Linked || a.Old.Blob != j.Entries[0].Old.Blob || a.Old.Content != nil || string(a.New.Content) != "two\n" ||
		c.Old.Linked || string(c.Old.Content) != "kept inline\n" || string(c.New.Content) != "three\n" {
		t.Errorf("have %+v", back.Entries)
	}
}

// TestRollbackChecksTheLinkedOldFile: the old files live as hard links in the tree's
// .mpspatch/, which anyone who can write the tree can replace. A rollback restores one
// only when its blob ID is the one the authenticated journal records; otherwise it stops
// and keeps the journal, and writes nothing it cannot vouch for.
func TestRollbackChecksTheLinkedOldFile(t *testing.T) {
	fx := newFixture(t, mpsBase, mpsSteps()...)
	s := mustLoad(t, fx.patches)
	before := snapshot(t, fx.repo)
	root := openRoot(t, fx.repo)
	crashApplyAt(t, root, s, "committed")
	j := committedJournal(t, root)
	linked := -1
	for i, e := range j.Entries {
		if e.Old.Linked {
			linked = i
		}
	}
	if linked < 0 {
		t.Fatal("no entry linked its old file: this filesystem has hard links")
	}
	// Swap the link for other bytes, as a hostile checkout or a process racing us could.
	name := linkName(linked)
	if err := root.Remove(name); err != nil {
		t.Fatal(err)
	}
	if err := root.WriteFile(name, []byte("not the old file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Recover(root, Reverse)
	if err == nil || !strings.Contains(err.Error(), "no longer holds the file the journal recorded") || !Pending(root) {
		t.Fatalf("have %v (journal kept: %v), want a refused rollback with the journal kept", err, Pending(root))
	}
	for p, want := range before {
		if have, err := root.ReadFile(p); err == nil && string(have) == "not the old file\n" {
			t.Errorf("%s: restored from a tampered link (want %d bytes of base)", p, len(want))
		}
	}
}

// TestUnlinkableOldFileStaysInTheJournal: where a file cannot be hard-linked (a filesystem
// without hard links, a mount inside the tree), its old bytes go into the journal, and a
// rollback restores linked and inline entries alike.
func TestUnlinkableOldFileStaysInTheJournal(t *testing.T) {
	fx := newFixture(t, mpsBase, mpsSteps()...)
	s := mustLoad(t, fx.patches)
	before := snapshot(t, fx.repo)
	root := openRoot(t, fx.repo)
	linkFault = func(p string) error {
		if p == "aten/mps/Stream.mm" {
			return syscall.EXDEV
		}
		return nil
	}
	writeFault = func(p string) error {
		if p == "aten/mps/Pool.h" {
			return syscall.ENOSPC
		}
		return nil
	}
	var inline, linked int
	crashHook = func(step string) {
		if step != "committed" {
			return
		}
		for _, e := range committedJournal(t, root).Entries {
			switch {
			case e.Old.Linked:
				linked++
			case e.Old.Exists && e.Path == "aten/mps/Stream.mm" && len(e.Old.Content) > 0:
				inline++
			}
		}
	}
	_, err := Apply(root, s, Options{})
	linkFault, writeFault, crashHook = nil, nil, nil
	if inline != 1 || linked == 0 {
		t.Errorf("journal held %d inline and %d linked old files; want Stream.mm inline and the rest linked", inline, linked)
	}
	if err == nil || !strings.Contains(err.Error(), "rolled back: the tree is as before") {
		t.Fatalf("have %v, want a rollback", err)
	}
	if have := snapshot(t, fx.repo); !reflect.DeepEqual(have, before) {
		t.Fatalf("after the rollback the tree is not the base:\n%s", mapDiff(have, before))
	}
}
