package stack

import (
	"context"
	"fmt"
	"os"
	"os/exec"
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
	// Importing the same mails again is refused, naming the entry that holds the
	// change, and writes nothing (it used to append six duplicates as 0007-0012).
	before := dirFiles(t, dst)
	_, err = Import(context.Background(), ImportOptions{Src: raw, Dir: dst})
	if err == nil || !strings.Contains(err.Error(), "already holds the same change as 0001-a-make-line-10-safe.patch") {
		t.Errorf("second import: err = %v, want a refusal naming 0001", err)
	}
	if after := dirFiles(t, dst); len(after) != len(before) || after["series"] != before["series"] {
		t.Errorf("a refused import changed the series directory")
	}

	// A cover letter (git format-patch --cover-letter) is left out, and said so.
	cover := filepath.Join(t.TempDir(), "with-cover")
	if err := os.MkdirAll(cover, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range dirFiles(t, raw) {
		write(t, filepath.Join(cover, name), data)
	}
	write(t, filepath.Join(cover, "0000-cover-letter.patch"), "From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\nFrom: A <a@example.com>\nDate: Thu, 2 Jan 2025 03:04:05 +0000\nSubject: [PATCH 0/6] *** SUBJECT HERE ***\n\n*** BLURB HERE ***\n\nA (6):\n  a: make line 10 safe\n\n a.c | 2 +-\n\n-- \n2.39.5\n\n")
	res, err = Import(context.Background(), ImportOptions{Src: cover, Dir: filepath.Join(t.TempDir(), "p")})
	if err != nil {
		t.Fatalf("import with a cover letter: %v", err)
	}
	if len(res.Patches) != 6 || len(res.Skipped) != 1 || res.Skipped[0] != "0000-cover-letter.patch" {
		t.Errorf("import with a cover letter: %d patches, skipped %q; want 6 and the cover letter", len(res.Patches), res.Skipped)
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

func TestStripSeriesIDCases(t *testing.T) {
	tests := []struct {
		name, body, want string
		id               int
	}{
		{"own paragraph", "Why.\n\nSeries-Id: 0007\n", "Why.\n", 7},
		{"with other trailers", "Why.\n\nIntent: x\nSeries-Id: 0007\n", "Why.\n\nIntent: x\n", 7},
		{"repeated by an older rebase", "Why.\n\nIntent: x\nSeries-Id: 0007\nSeries-Id: 0007\nSeries-Id: 0007\n", "Why.\n\nIntent: x\n", 7},
		{"repeated, own paragraph", "Why.\n\nSeries-Id: 0002\nSeries-Id: 0002\n", "Why.\n", 2},
		{"only in an earlier paragraph", "Series-Id: 0003\n\nWhy.\n", "Series-Id: 0003\n\nWhy.\n", 0},
		{"none", "Why.\n\nIntent: x\n", "Why.\n\nIntent: x\n", 0},
		{"empty", "", "", 0},
	}
	for _, tt := range tests {
		have, id := stripSeriesID([]byte(tt.body))
		if string(have) != tt.want || id != tt.id {
			t.Errorf("%s: stripSeriesID = %q, %d; want %q, %d", tt.name, have, id, tt.want, tt.id)
		}
	}
}

// TestSubjectHeaderMatchesGit: import writes every subject's header as git
// format-patch does (folded plain text, or Q-encoded words), on this repository's own
// subjects and on ones made to need encoding or to fold at awkward places.
func TestSubjectHeaderMatchesGit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, true)
	repo := t.TempDir()
	e.git(repo, "init", "-q")
	e.git(repo, "commit", "-q", "--allow-empty", "-m", "base")
	subjects := []string{
		"short",
		"naïve subject with ümlauts and a long tail that must be folded over more than one line",
		"a subject with =? in it and ? and _ and = signs",
		"日本語のサブジェクト、とても長いので折り返されるはずですが、文字は分割されません",
		strings.Repeat("word ", 20) + "end",
		"averyveryveryveryveryveryveryveryveryveryveryveryveryveryveryveryverylongword then more",
		"tab\tinside and trailing",
	}
	for i, s := range subjects {
		write(t, filepath.Join(repo, "f.txt"), strings.Repeat("x\n", i+1))
		e.git(repo, "add", "-A")
		e.git(repo, "commit", "-q", "--cleanup=verbatim", "-m", s)
	}
	check := func(dir, rng string) int {
		t.Helper()
		out, err := e.g.FormatPatch(context.Background(), dir, rng)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, m := range splitMbox(out) {
			parts, err := splitMail(m)
			if err != nil {
				t.Fatal(err)
			}
			loc := subjectLineRE().FindIndex(parts.header)
			if loc == nil {
				t.Fatalf("no Subject: in\n%s", parts.header)
			}
			gitHeader := string(parts.header[loc[0]:loc[1]])
			mm, err := parseMailMessage(m)
			if err != nil {
				t.Fatal(err)
			}
			if have := subjectHeader(mm.Subject); have != gitHeader {
				t.Errorf("subject %q:\nimport writes\n%s\ngit format-patch writes\n%s", mm.Subject, have, gitHeader)
			}
			n++
		}
		return n
	}
	n := check(repo, fmt.Sprintf("HEAD~%d..HEAD", len(subjects)))
	if top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output(); err == nil {
		n += check(strings.TrimSpace(string(top)), "HEAD~150..HEAD")
	}
	t.Logf("%d subjects compared with git format-patch", n)
}

func TestCleanSubjectAndInBodyHeaders(t *testing.T) {
	for have, want := range map[string]string{
		"[PATCH v2 3/7] fix it":        "fix it",
		"[HOSTILE 1/2] fix it":         "fix it",
		"Re: [RFC][PATCH] fix it":      "fix it",
		"  [PATCH]   fix [the] thing ": "fix [the] thing",
		"fix it":                       "fix it",
		"[unclosed fix":                "[unclosed fix",
	} {
		if got := cleanSubject(have); got != want {
			t.Errorf("cleanSubject(%q) = %q, want %q", have, got, want)
		}
	}
	body := []byte("From: Real Author <real@example.com>\nDate: Mon, 1 Jan 2024 00:00:00 +0000\n\nWhy.\n")
	rest, from, subj, date := inBodyHeaders(body, "Sender <s@example.com>", "s", "d")
	if string(rest) != "Why.\n" || from != "Real Author <real@example.com>" || subj != "s" || date != "Mon, 1 Jan 2024 00:00:00 +0000" {
		t.Errorf("inBodyHeaders = %q, %q, %q, %q", rest, from, subj, date)
	}
	plainBody := []byte("From here on, prose.\n\nMore.\n")
	if rest, from, _, _ := inBodyHeaders(plainBody, "A <a@b>", "s", "d"); string(rest) != string(plainBody) || from != "A <a@b>" {
		t.Errorf("a body starting with prose was read as in-body headers: %q, %q", rest, from)
	}
}
