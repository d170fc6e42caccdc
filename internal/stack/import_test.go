package stack

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mpspatch/mpspatch/internal/series"
)

// rawFormatPatch writes the fixture's dev commits with plain git format-patch: numbered
// subjects, real SHAs, a signature, git's own file names.
func rawFormatPatch(t *testing.T, f *fixture, args ...string) string {
	out := filepath.Join(t.TempDir(), "raw")
	f.git(f.up, append([]string{"format-patch", "-q", "--numbered", "--signature=2.39.5", "-o", out}, append(args, "v1..dev")...)...)
	return out
}

func TestImportFormatPatchDir(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	raw := rawFormatPatch(t, f, "--full-index")
	if _, err := os.Stat(filepath.Join(raw, "0001-a-make-line-10-safe.patch")); err != nil {
		t.Fatalf("git format-patch names: %v", err)
	}
	// Such a directory is no series: check warns and reads it normalised.
	pd, err := series.OpenPatchDir(raw)
	if err != nil {
		t.Fatal(err)
	}
	defer pd.Close()
	fsys, warnings, err := NormalisedView(context.Background(), pd)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := series.Load(fsys, ".", raw); err != nil {
		t.Fatalf("normalised view does not load: %v", err)
	}
	if len(warnings) != 7 || !strings.Contains(warnings[0], "subject prefix made [PATCH]") || !strings.Contains(warnings[0], "signature removed") {
		t.Errorf("warnings: %q", warnings)
	}

	dst := filepath.Join(t.TempDir(), "series")
	res, err := Import(context.Background(), ImportOptions{Src: raw, Dir: dst})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Patches) != 6 || res.Patches[2].Name != "0003-new-add-a-helper-file.patch" {
		t.Fatalf("imported %+v", res.Patches)
	}
	// The imported mails are the exported ones: same names, same bytes.
	want := dirFiles(t, f.patches)
	have := dirFiles(t, dst)
	for name, data := range want {
		if name == "series" {
			continue
		}
		if have[name] != data {
			t.Errorf("%s differs from export:\n--- export\n%s\n--- import\n%s", name, data, have[name])
		}
	}
	if _, err := series.Load(os.DirFS(dst), ".", dst); err != nil {
		t.Fatal(err)
	}
	// A second import appends with the next IDs.
	res, err = Import(context.Background(), ImportOptions{Src: raw, Dir: dst})
	if err != nil {
		t.Fatal(err)
	}
	if res.Patches[0].Name != "0007-a-make-line-10-safe.patch" {
		t.Errorf("second import starts at %s, want 0007", res.Patches[0].Name)
	}
}

func TestImportMbox(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	mbox := filepath.Join(t.TempDir(), "series.mbox")
	write(t, mbox, f.git(f.up, "format-patch", "--stdout", "--full-index", "--signature=2.39.5", "v1..dev")+"\n")
	dst := filepath.Join(t.TempDir(), "series")
	res, err := Import(context.Background(), ImportOptions{Src: mbox, Dir: dst})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Patches) != 6 {
		t.Fatalf("imported %d patches, want 6", len(res.Patches))
	}
	want := dirFiles(t, f.patches)
	have := dirFiles(t, dst)
	for name, data := range want {
		if name != "series" && have[name] != data {
			t.Errorf("%s differs from export:\n--- export\n%s\n--- import\n%s", name, data, have[name])
		}
	}
}

func TestStripSeriesID(t *testing.T) {
	tests := []struct{ msg string }{
		{"subject\n"},
		{"subject\n\nbody line\n"},
		{"subject\n\nbody\n\nIntent: x\nTest: y\n"},
		{"subject\n\nIntent: only trailers\n"},
	}
	for _, tt := range tests {
		with := addSeriesID(tt.msg, 3)
		_, body, _ := strings.Cut(with, "\n\n")
		have, id := stripSeriesID([]byte(body))
		_, wantBody, _ := strings.Cut(tt.msg, "\n\n")
		if id != 3 || string(have) != wantBody {
			t.Errorf("message %q: with trailer %q, stripped body %q (id %d), want %q", tt.msg, with, have, id, wantBody)
		}
	}
}
