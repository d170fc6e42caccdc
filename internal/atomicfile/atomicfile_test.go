package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

func TestWriteReplacesWhole(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "report.html")
	if err := os.WriteFile(p, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, sync := range []bool{false, true} {
		if err := WriteBytes(p, []byte("new content"), Options{Sync: sync}); err != nil {
			t.Fatal(err)
		}
		data, _ := os.ReadFile(p)
		fi, _ := os.Stat(p)
		if string(data) != "new content" || fi.Mode().Perm() != 0o644 {
			t.Errorf("sync=%v: have %q mode %o", sync, data, fi.Mode().Perm())
		}
	}
	assertOnlyFile(t, dir, "report.html")
}

func TestFailedWriteLeavesTargetAndNoTemp(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "junit.xml")
	if err := os.WriteFile(p, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("renderer failed")
	err := Write(p, func(w io.Writer) error {
		_, _ = w.Write([]byte("half"))
		return boom
	}, Options{})
	if !errors.Is(err, boom) {
		t.Fatalf("have %v, want the writer's error", err)
	}
	if data, _ := os.ReadFile(p); string(data) != "keep" {
		t.Errorf("target changed to %q", data)
	}
	assertOnlyFile(t, dir, "junit.xml")
	if err := WriteBytes(filepath.Join(dir, "no-such-dir", "x"), nil, Options{}); err == nil {
		t.Error("writing into a missing directory succeeded")
	}
}

func assertOnlyFile(t *testing.T, dir, name string) {
	t.Helper()
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 || ents[0].Name() != name {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("directory holds %v, want only %s (a temp file left behind?)", names, name)
	}
}
