package cli

import (
	"regexp"
	"strings"
	"testing"

	"github.com/mpspatch/mpspatch/internal/series"
)

var ansi = regexp.MustCompile("\x1b\\[[0-9;]*m")

// Colour must not move columns: the coloured output, escapes removed, is the plain output.
func TestColourKeepsColumnsAligned(t *testing.T) {
	t.Parallel()
	render := func(colour bool) string {
		p := &printer{color: colour}
		var b strings.Builder
		cw := newColumnWriter(&b, 2)
		cw.Write([]byte("RESULT\tSCENARIO\tDETAIL\n"))
		cw.Write([]byte(p.Paint(green, "pass") + "\tshared-buffer\tok\n"))
		cw.Write([]byte(p.Paint(red, "FAIL") + "\tx\t" + p.Paint(dim, "aborted") + "\n"))
		cw.Write([]byte("-\tlonger-scenario-name\t-\n"))
		if err := cw.Flush(); err != nil {
			t.Fatal(err)
		}
		b.WriteString(pad(p.Paint(green, "applied"), 12) + "|\n")
		b.WriteString(pad(p.Paint(dim, "not applied"), 12) + "|\n")
		b.WriteString(pad("modified", 12) + "|\n")
		return b.String()
	}
	plain, coloured := render(false), render(true)
	if !strings.Contains(coloured, "\x1b[") {
		t.Fatal("the coloured rendering has no colour")
	}
	if have := ansi.ReplaceAllString(coloured, ""); have != plain {
		t.Errorf("colour moved the columns:\n%s\nwant:\n%s", have, plain)
	}
	want := "RESULT  SCENARIO              DETAIL\n" +
		"pass    shared-buffer         ok\n" +
		"FAIL    x                     aborted\n" +
		"-       longer-scenario-name  -\n" +
		"applied     |\nnot applied |\nmodified    |\n"
	if plain != want {
		t.Errorf("have:\n%s\nwant:\n%s", plain, want)
	}
}

func TestVisibleWidth(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]int{"": 0, "abc": 3, "\x1b[31mred\x1b[0m": 3, "\x1b[1;32mé\x1b[0m": 1, "a\x1b[2mb": 2} {
		if have := visibleWidth(s); have != want {
			t.Errorf("visibleWidth(%q) = %d, want %d", s, have, want)
		}
	}
}

// Completion offers the values each flag takes and directories for paths; every offered
// value is one the command accepts.
func TestFlagCompletion(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"verify", "--device", ""}, []string{"mps", "cuda", "cpu", ":4"}},
		{[]string{"verify", "--profile", ""}, []string{"quick", "full", ":4"}},
		{[]string{"audit", "--format", ""}, []string{"text", "json", "sarif", ":4"}},
		{[]string{"apply", "--tree", ""}, []string{":16"}}, // directories
		{[]string{"status", ""}, []string{":16"}},          // the positional tree
		{[]string{"clone", "--dir", ""}, []string{":16"}},
		{[]string{"check", "--patches", ""}, []string{":16"}},
		{[]string{"--config", "x", "verify", "--report-dir", ""}, []string{":16"}},
	}
	for _, tt := range tests {
		code, stdout, stderr := runMain(t, append([]string{"__complete"}, tt.args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", tt.args, code, stderr)
		}
		if have := strings.Fields(stdout); strings.Join(have, " ") != strings.Join(tt.want, " ") {
			t.Errorf("%v: have %q, want %q", tt.args, have, tt.want)
		}
	}
	for _, dev := range flagValues["device"] {
		if code, _, stderr := runMain(t, "verify", "--device", dev, "--render", "/nonexistent"); code != ExitUsage || strings.Contains(stderr, "--device") {
			t.Errorf("--device %s is offered but refused: %s", dev, stderr)
		}
	}
	for _, prof := range flagValues["profile"] {
		if code, _, stderr := runMain(t, "verify", "--profile", prof, "--render", "/nonexistent"); code != ExitUsage || strings.Contains(stderr, "--profile") {
			t.Errorf("--profile %s is offered but refused: %s", prof, stderr)
		}
	}
	for _, f := range flagValues["audit format"] {
		if code, _, stderr := runMain(t, "audit", "--format", f, "--tree", "/nonexistent"); strings.Contains(stderr, "--format") {
			t.Errorf("--format %s is offered but refused (exit %d): %s", f, code, stderr)
		}
	}
}

// status's files table: "patched+edits" (13 characters) ran into the path; every state
// now has a column as wide as the widest.
func TestStatusFilesColumn(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	writeStatusFiles(&b, []series.FileStatus{
		{Path: "a.mm", Version: 2, Steps: 2, Exists: true},
		{Path: "b.mm", Version: 2, Steps: 2, Exists: true, Edited: true},
		{Path: "c.mm", Version: 0, Steps: 1, Exists: true, Edited: true},
	})
	want := "files:\n" +
		"  patched       a.mm\n" +
		"  patched+edits b.mm\n" +
		"  base+edits    c.mm\n"
	if have := b.String(); have != want {
		t.Errorf("have:\n%s\nwant:\n%s", have, want)
	}
}
