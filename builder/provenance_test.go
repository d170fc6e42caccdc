package builder

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/")

func sampleProvenance() Provenance {
	return Provenance{
		Schema: provenanceSchema, Tool: "mpspatch", ToolVersion: "v0.1.0",
		UpstreamCommit: "d38164a545b4a4e4e0cf73ce67173f70574890b6",
		SeriesHash:     "4f1c0d9e0b7a",
		Patches:        []string{"0001-stream-pool.patch", "0002-guard-kernel-cache.patch"},
		BuiltAt:        time.Date(2025, 12, 12, 10, 30, 0, 0, time.UTC),
		BuildSeconds:   2712.5,
		Python:         "/opt/homebrew/bin/python3.12", PythonVersion: "3.12.8",
		Platform: "darwin/arm64",
		SDK:      "/Library/Developer/CommandLineTools/SDKs/MacOSX.sdk",
		Env:      map[string]string{"USE_MPS": "1", "MAX_JOBS": "10"},
		Log:      "/src/pytorch/.mpspatch/logs/build-20251212T093000Z.log",
	}
}

func TestWriteProvenanceGolden(t *testing.T) {
	tree := t.TempDir()
	os.Mkdir(filepath.Join(tree, "torch"), 0o755)
	// An older stamp is replaced whole.
	os.WriteFile(filepath.Join(tree, ProvenanceFile), []byte(`{"old": true, "padding": "`+strings.Repeat("x", 4096)+`"}`), 0o644)

	path, err := writeProvenance(tree, sampleProvenance())
	if err != nil {
		t.Fatal(err)
	}
	if path != filepath.Join(tree, ProvenanceFile) {
		t.Errorf("path = %s, want %s", path, filepath.Join(tree, ProvenanceFile))
	}
	have, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "provenance.golden.json")
	if *update {
		if err := os.WriteFile(golden, have, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(have, want) {
		t.Errorf("stamp differs from %s:\n%s", golden, have)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o644 {
		t.Errorf("stamp mode = %v, want 0644", fi.Mode().Perm())
	}
	entries, _ := os.ReadDir(filepath.Join(tree, "torch"))
	if len(entries) != 1 {
		t.Errorf("torch/ holds %d entries after the write, want only the stamp (no temp files left)", len(entries))
	}

	back, err := ReadProvenance(tree)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, sampleProvenance()) {
		t.Errorf("round trip:\n have %+v\n want %+v", back, sampleProvenance())
	}
}

func TestWriteProvenanceNoTorchDir(t *testing.T) {
	tree := t.TempDir()
	_, err := writeProvenance(tree, sampleProvenance())
	if err == nil || !strings.Contains(err.Error(), "write provenance "+filepath.Join(tree, ProvenanceFile)) {
		t.Errorf("error = %v, want one naming the stamp path", err)
	}
}

func TestReadProvenanceErrors(t *testing.T) {
	tests := []struct {
		name    string
		data    string
		wantErr string
	}{
		{name: "missing", wantErr: "no provenance stamp"},
		{name: "not json", data: "{", wantErr: "unexpected EOF"},
		{name: "other tool", data: `{"schema":1,"tool":"pip"}`, wantErr: `tool is "pip"`},
		{name: "newer schema", data: `{"schema":2,"tool":"mpspatch"}`, wantErr: "schema 2"},
		{name: "no schema", data: `{"tool":"mpspatch"}`, wantErr: "schema 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tree := t.TempDir()
			os.Mkdir(filepath.Join(tree, "torch"), 0o755)
			if tt.data != "" {
				os.WriteFile(filepath.Join(tree, ProvenanceFile), []byte(tt.data), 0o644)
			}
			_, err := ReadProvenance(tree)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error = %v, want it to contain %q", err, tt.wantErr)
			}
			if tt.name == "missing" && !errors.Is(err, ErrNoProvenance) {
				t.Errorf("error = %v, want ErrNoProvenance", err)
			}
		})
	}
}

func FuzzParseProvenance(f *testing.F) {
	golden, _ := os.ReadFile(filepath.Join("testdata", "provenance.golden.json"))
	f.Add(golden)
	f.Add([]byte(`{"schema":1,"tool":"mpspatch","patches":null,"env":{}}`))
	f.Add([]byte(`{"schema":1,"tool":"mpspatch","built_at":"not a time"}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := parseProvenance("fuzz", data)
		if err != nil {
			return
		}
		if p.Tool != "mpspatch" || p.Schema != provenanceSchema {
			t.Errorf("accepted %+v", p)
		}
	})
}
