package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runMain runs Main with buffers and returns the exit code, stdout and stderr.
func runMain(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(context.Background(), args, IOStreams{In: strings.NewReader(""), Out: &out, Err: &errb, Getenv: func(string) string { return "" }})
	return code, out.String(), errb.String()
}

// mainCase is one invocation of mpspatch and what it must produce: the exit code, and a
// substring of stdout and of stderr ("" matches anything).
type mainCase struct {
	name       string
	args       []string
	wantCode   int
	wantStdout string
	wantStderr string
}

// runCases runs each case as a subtest through Main.
func runCases(t *testing.T, cases []mainCase) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runMain(t, tt.args...)
			if code != tt.wantCode {
				t.Errorf("exit: have %d, want %d\nstdout: %s\nstderr: %s", code, tt.wantCode, stdout, stderr)
			}
			if !strings.Contains(stdout, tt.wantStdout) {
				t.Errorf("stdout lacks %q:\n%s", tt.wantStdout, stdout)
			}
			if !strings.Contains(stderr, tt.wantStderr) {
				t.Errorf("stderr lacks %q:\n%s", tt.wantStderr, stderr)
			}
		})
	}
}

func TestExitCodes(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.toml")
	if err := os.WriteFile(bad, []byte("[verify]\nprofil = \"full\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	emptySeries := filepath.Join(dir, "empty")
	if err := os.MkdirAll(emptySeries, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(emptySeries, "0001-stray.patch"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	runCases(t, []mainCase{
		{"help lists exit codes", []string{"--help"}, ExitOK, "130  interrupted", ""},
		{"unknown flag", []string{"check", "--nope"}, ExitUsage, "", "unknown flag: --nope"},
		{"unknown command", []string{"frobnicate"}, ExitUsage, "", "unknown command"},
		{"extra argument", []string{"status", "x", "y"}, ExitUsage, "", "accepts at most 1 arg"},
		{"positional tree", []string{"status", filepath.Join(dir, "no-such-tree")}, ExitUsage, "", "does not exist"},
		{"tree twice", []string{"status", "--tree", "a", "b"}, ExitUsage, "", "TREE given twice"},
		{"version flag", []string{"--version"}, ExitOK, "mpspatch dev", ""},
		{"config unknown key", []string{"--config", bad, "config"}, ExitUsage, "", "bad.toml:2:1: key verify.profil: unknown key"},
		{"missing config", []string{"--config", filepath.Join(dir, "none.toml"), "config"}, ExitUsage, "", "read config"},
		{"missing tree", []string{"status", "--tree", filepath.Join(dir, "no-such-tree")}, ExitUsage, "", "does not exist"},
		{"missing patches dir", []string{"check", "--patches", filepath.Join(dir, "nope")}, ExitUsage, "", "patches directory"},
		{"lint failure", []string{"check", "--patches", emptySeries}, ExitCheckFailed, "0001-stray.patch: read as git format-patch output", ""},
		{"config default", []string{"config", "--default"}, ExitOK, "[upstream]", ""},
		{"completion", []string{"completion", "bash"}, ExitOK, "bash completion", ""},
		{"version", []string{"version"}, ExitOK, "series   sha256:", ""},
	})
}

func TestVersionJSON(t *testing.T) {
	code, stdout, _ := runMain(t, "version", "--json")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	var v versionInfo
	if err := json.Unmarshal([]byte(stdout), &v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, stdout)
	}
	if len(v.SeriesHash) != 64 || !strings.Contains(v.Base, "d38164a545b4a4e4e0cf73ce67173f70574890b6") {
		t.Errorf("have %+v", v)
	}
}

func TestEveryCommandHasAnExample(t *testing.T) {
	d := &deps{io: IOStreams{Out: &bytes.Buffer{}, Err: &bytes.Buffer{}}, global: &globalOptions{}}
	for _, c := range newRootCmd(d, "").Commands() {
		if c.Hidden || c.Name() == "help" || c.Name() == "completion" {
			continue
		}
		if strings.TrimSpace(c.Example) == "" || strings.TrimSpace(c.Long) == "" {
			t.Errorf("%s: --help needs a long description and an example", c.Name())
		}
	}
}

func TestColourOnlyOnATerminal(t *testing.T) {
	env := map[string]string{}
	s := IOStreams{OutTTY: true, Getenv: func(k string) string { return env[k] }}
	if !s.ColorOut() {
		t.Error("a terminal without NO_COLOR should get colour")
	}
	env["NO_COLOR"] = "1"
	if s.ColorOut() {
		t.Error("NO_COLOR must switch colour off")
	}
	if (IOStreams{OutTTY: false, Getenv: func(string) string { return "" }}).ColorOut() {
		t.Error("a pipe must not get colour")
	}
}
