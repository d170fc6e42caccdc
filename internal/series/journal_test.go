package series

import (
	"reflect"
	"strings"
	"testing"
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
	j := journal{Version: 2, Op: "apply", Entries: []journalEntry{
		{Path: "a/b.mm", Mode: 0o644, Content: []byte("one\ntwo\n")},
		{Path: "gone.txt", Delete: true},
		{Path: "empty.h", Mode: 0o755, Content: []byte{}},
	}}
	data, err := encodeJournal(j)
	if err != nil {
		t.Fatal(err)
	}
	back, err := decodeJournal(data)
	if err != nil {
		t.Fatal(err)
	}
	for i := range j.Entries {
		h, w := back.Entries[i], j.Entries[i]
		if h.Path != w.Path || h.Delete != w.Delete || h.Mode != w.Mode || string(h.Content) != string(w.Content) {
			t.Errorf("entry %d: have %+v, want %+v", i, h, w)
		}
	}
	for name, bad := range map[string][]byte{
		"truncated":  data[:len(data)-3],
		"trailing":   append(append([]byte{}, data...), 'x'),
		"no header":  []byte("{"),
		"bad json":   []byte("{nope}\n"),
		"v1 journal": []byte(`{"version":1,"entries":[]}` + "\n"),
	} {
		if _, err := decodeJournal(bad); err == nil {
			t.Errorf("%s: decoded a corrupt journal", name)
		}
	}
}

func TestUnreadableJournalStopsRecovery(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{journalFile: "garbage"})
	_, err := Recover(openRoot(t, dir))
	if err == nil || !strings.Contains(err.Error(), "is unreadable") {
		t.Fatalf("have %v, want an error that names the unreadable journal", err)
	}
}
