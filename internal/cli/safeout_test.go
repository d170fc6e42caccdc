package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"unicode/utf8"
)

func TestEscapeControls(t *testing.T) {
	tests := []struct {
		name          string
		have          string
		redraw, color bool
		want          string
	}{
		{"plain text", "ok\tdone\n", false, false, "ok\tdone\n"},
		{"title set (OSC)", "a\x1b]0;pwned\x07b", false, false, `a\x1b]0;pwned\x07b`},
		{"clipboard (OSC 52)", "\x1b]52;c;ZXZpbA==\x1b\\", true, true, `\x1b]52;c;ZXZpbA==\x1b\`},
		{"clear screen", "\x1b[2J\x1b[H", true, true, `\x1b[2J\x1b[H`},
		{"carriage return", "fake\rreal", false, false, `fake\x0dreal`},
		{"backspace and DEL", "a\bb\x7f", false, false, `a\x08b\x7f`},
		{"C1 CSI as UTF-8", "x\u009b2Jy", false, false, `x\u009b2Jy`},
		{"C1 CSI as a raw byte", "x\x9b2Jy", false, false, `x\x9b2Jy`},
		{"other UTF-8 kept", "naïve — ✓\n", false, false, "naïve — ✓\n"},
		{"own colours pass where colour is on", "\x1b[32mok\x1b[0m", false, true, "\x1b[32mok\x1b[0m"},
		{"own colours escaped where it is off", "\x1b[32mok\x1b[0m", false, false, `\x1b[32mok\x1b[0m`},
		{"other colours escaped", "\x1b[8mhidden\x1b[0m", false, true, `\x1b[8mhidden` + "\x1b[0m"},
		{"redraw passes on a terminal", "\r\x1b[Kline", true, false, "\r\x1b[Kline"},
		{"redraw escaped elsewhere", "\r\x1b[Kline", false, true, `\x0d\x1b[Kline`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if have := string(escapeControls([]byte(tt.have), tt.redraw, tt.color)); have != tt.want {
				t.Errorf("escapeControls(%q) = %q, want %q", tt.have, have, tt.want)
			}
		})
	}
}

// A sequence or character cut between two writes is judged whole.
func TestSafeWriterAcrossWrites(t *testing.T) {
	for _, text := range []string{"\x1b[32mok\x1b[0m\n", "x\u009by\n", "\r\x1b[Kfetch https://ci:s3cret@h/x 45%"} {
		for cut := 0; cut <= len(text); cut++ {
			var out bytes.Buffer
			w := newSafeWriter(&out, true, true)
			w.Write([]byte(text[:cut]))
			w.Write([]byte(text[cut:]))
			w.Flush()
			want := string(escapeControls([]byte(strings.Replace(text, "ci:s3cret", "***", 1)), true, true))
			if out.String() != want {
				t.Errorf("%q cut at %d: have %q, want %q", text, cut, out.String(), want)
			}
		}
	}
}

// writeSeriesTitled writes a one-patch series whose subject is title, and the tree it
// applies to.
func writeSeriesTitled(t *testing.T, title string) (tree, patches string) {
	t.Helper()
	dir := t.TempDir()
	tree, patches = filepath.Join(dir, "tree"), filepath.Join(dir, "patches")
	mail := "From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n" +
		"From: Test Author <author@example.invalid>\nDate: Sun, 14 Dec 2025 12:00:00 +0000\n" +
		"Subject: [PATCH] " + title + "\n\nBody.\n---\n" +
		"diff --git a/a.h b/a.h\n--- a/a.h\n+++ b/a.h\n@@ -1,2 +1,2 @@\n struct Cache {\n-  int x;\n+  int y;\n"
	for p, c := range map[string]string{
		filepath.Join(tree, "a.h"):             "struct Cache {\n  int x;\n};\n",
		filepath.Join(patches, "series"):       "0001-x.patch\n",
		filepath.Join(patches, "0001-x.patch"): mail,
	} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return tree, patches
}

// Raw terminal escapes in a patch subject reach the terminal escaped, on a terminal with
// colour too, while mpspatch's own colours still pass.
func TestSubjectEscapesAreShownEscaped(t *testing.T) {
	tree, patches := writeSeriesTitled(t, "Fix\x1b]0;pwned\x07 the\x1b[2J cache\u009b")
	var out, errb bytes.Buffer
	code := Main(context.Background(), []string{"check", "--tree", tree, "--patches", patches},
		IOStreams{In: strings.NewReader(""), Out: &out, Err: &errb, OutTTY: true, ErrTTY: true, Getenv: func(string) string { return "" }})
	if code != ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out.String(), errb.String())
	}
	for _, bad := range []string{"\x1b]", "\x07", "\x1b[2J", "\u009b"} {
		if strings.Contains(out.String(), bad) {
			t.Errorf("stdout holds the raw %q:\n%q", bad, out.String())
		}
	}
	if !strings.Contains(out.String(), `Fix\x1b]0;pwned\x07 the\x1b[2J cache\u009b`) {
		t.Errorf("stdout does not show the subject escaped:\n%q", out.String())
	}
	if !strings.Contains(out.String(), "\x1b[32m") {
		t.Errorf("mpspatch's own colour was lost:\n%q", out.String())
	}
	// --json carries the subject as the encoder escapes it, untouched by the text rules.
	code, stdout, _ := runMain(t, "--json", "check", "--tree", tree, "--patches", patches)
	if code != ExitOK || !json.Valid([]byte(stdout)) || !strings.Contains(stdout, `Fix\u001b]0;pwned\u0007 the\u001b[2J cache`) {
		t.Errorf("--json: exit %d\n%s", code, stdout)
	}
}

// An error message built from an untrusted string (a path given on the command line) is
// escaped on stderr too.
func TestErrorMessageEscapes(t *testing.T) {
	code, _, stderr := runMain(t, "--config", filepath.Join(t.TempDir(), "x\x1b]0;pwned\x07.toml"), "config")
	if code != ExitUsage || strings.Contains(stderr, "\x1b") || !strings.Contains(stderr, `x\x1b]0;pwned\x07.toml`) {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}

// Every case of issue 19's item 8: the secret appears nowhere, not on stdout, stderr, in
// the --json documents, nor in any file the command left.
func TestCredentialsShownNowhere(t *testing.T) {
	const secret = "hunter2SECRET"
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	commit := strings.Repeat("ab", 20)
	configFor := func(t *testing.T, url, extra string) string {
		t.Helper()
		p := filepath.Join(t.TempDir(), "mpspatch.toml")
		cfg := "[upstream]\nurl = '" + url + "'\ntag = \"\"\ncommit = \"" + commit + "\"\n" + extra
		if err := os.WriteFile(p, []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	urls := map[string]string{
		"https token":                    "https://ci:" + secret + "@127.0.0.1:1/up.git",
		"https lone token":               "https://" + secret + "@127.0.0.1:1/up.git",
		"rejected by net/url (quote)":    `https://ci:` + secret + `"x@127.0.0.1:1/up.git`,
		"rejected by net/url (escape)":   "https://ci:" + secret + "%zz@127.0.0.1:1/up.git",
		"ssh password":                   "ssh://git:" + secret + "@127.0.0.1:1/up.git",
		"scp-like address with password": "git:" + secret + "@127.0.0.1:up.git",
	}
	for name, url := range urls {
		t.Run(name, func(t *testing.T) {
			cfg := configFor(t, url, "")
			dir := filepath.Join(t.TempDir(), "pytorch")
			for _, args := range [][]string{
				{"config"},
				{"check", "--upstream", "v2.10.0"},
				{"clone", "--dir", dir},
				{"upstream", "tags", "--since", "v2.9.1"},
			} {
				for _, jsonFlag := range []bool{false, true} {
					full := append([]string{"--config", cfg}, args...)
					if jsonFlag {
						full = append([]string{"--json"}, full...)
					}
					_, stdout, stderr := runMain(t, full...)
					if strings.Contains(stdout+stderr, secret) {
						t.Errorf("mpspatch %s shows the secret:\nstdout: %s\nstderr: %s", strings.Join(full, " "), stdout, stderr)
					}
					if jsonFlag && !json.Valid([]byte(stdout)) {
						t.Errorf("mpspatch %s: stdout is not one JSON document:\n%s", strings.Join(full, " "), stdout)
					}
				}
			}
			// Whatever the clone attempts left (a log, .git/config) holds no secret either.
			filepath.Walk(filepath.Dir(dir), func(p string, fi os.FileInfo, err error) error {
				if err == nil && fi.Mode().IsRegular() {
					if data, _ := os.ReadFile(p); bytes.Contains(data, []byte(secret)) {
						t.Errorf("%s holds the secret:\n%s", p, data)
					}
				}
				return nil
			})
		})
	}

	t.Run("redis password-only user-info", func(t *testing.T) {
		cfg := configFor(t, "https://github.com/pytorch/pytorch.git", "[build.cache]\nremote = \"redis://"+secret+"@cache.lan:6379\"\n")
		for _, args := range [][]string{{"config"}, {"--json", "config"}} {
			code, stdout, stderr := runMain(t, append([]string{"--config", cfg}, args...)...)
			if code != ExitUsage || !strings.Contains(stderr, "ccache reads as a password") {
				t.Errorf("%v: exit %d, want %d refusing it\n%s", args, code, ExitUsage, stderr)
			}
			if strings.Contains(stdout+stderr, secret) {
				t.Errorf("%v shows the secret:\nstdout: %s\nstderr: %s", args, stdout, stderr)
			}
		}
	})
}

// verify --render on a FIFO is refused at once (exit 2), never waited on for a writer.
func TestVerifyRenderRefusesAFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "results.jsonl")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runMain(t, "verify", "--render", fifo, "--report-dir", t.TempDir())
	if code != ExitUsage || !strings.Contains(stderr, "--render "+fifo+": not a regular file") {
		t.Errorf("exit %d, want %d refusing the FIFO\n%s", code, ExitUsage, stderr)
	}
}

// -v prints the environment that decides a run, but not the credentials in it: variables
// named like secrets, the one [build.cache] password_env names whatever its name, an
// Authorization header handed to git, and URLs' user-info.
func TestVerboseHidesCredentials(t *testing.T) {
	const secret = "hunter2SECRET"
	t.Setenv("MPSPATCH_CACHE_PASSWORD", secret)
	t.Setenv("MPSPATCH_REDIS_PW", secret)
	t.Setenv("GIT_CONFIG_VALUE_9", "Authorization: Basic "+secret)
	t.Setenv("MPSPATCH_MIRROR", "https://ci:"+secret+"@mirror.example/pytorch.git")
	cfg := filepath.Join(t.TempDir(), "mpspatch.toml")
	os.WriteFile(cfg, []byte("[build.cache]\nremote = \"redis://cache.lan:6379\"\npassword_env = \"MPSPATCH_REDIS_PW\"\n"), 0o644)
	code, _, stderr := runMain(t, "-v", "--config", cfg, "config")
	if code != ExitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if strings.Contains(stderr, secret) {
		t.Errorf("-v shows a credential:\n%s", stderr)
	}
	for _, want := range []string{"mpspatch: env MPSPATCH_CACHE_PASSWORD=***", "mpspatch: env MPSPATCH_REDIS_PW=***", "mpspatch: env MPSPATCH_MIRROR=https://***@mirror.example/pytorch.git"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}

// FuzzSafeWriter: whatever the text and wherever a write cuts it, no control character
// but tab and newline reaches a stream without colour or redraw (none at all: C0, DEL, C1
// as a character or as a raw byte), and the result does not depend on the cut.
func FuzzSafeWriter(f *testing.F) {
	f.Add("plain\n", 3)
	f.Add("a\x1b]0;t\x07b\u009bc\x9bd\r\x7f", 5)
	f.Add("\x1b[32mok\x1b[0m\r\x1b[K", 2)
	f.Add("é\xc3", 1)
	f.Fuzz(func(t *testing.T, text string, cut int) {
		if strings.Contains(text, "://") {
			return // redaction is FuzzText's (internal/redact)
		}
		if cut < 0 {
			cut = -cut
		}
		cut %= len(text) + 1
		var whole, split bytes.Buffer
		w := newSafeWriter(&whole, false, false)
		w.Write([]byte(text))
		w.Flush()
		w = newSafeWriter(&split, false, false)
		w.Write([]byte(text[:cut]))
		w.Write([]byte(text[cut:]))
		w.Flush()
		if whole.String() != split.String() {
			t.Fatalf("%q cut at %d: %q, whole: %q", text, cut, split.String(), whole.String())
		}
		out := whole.Bytes()
		for i := 0; i < len(out); {
			r, size := utf8.DecodeRune(out[i:])
			bad := r < 0x20 && r != '\t' && r != '\n' || r == 0x7f || r >= 0x80 && r <= 0x9f
			if r == utf8.RuneError && size == 1 {
				bad = out[i] >= 0x80 && out[i] <= 0x9f
			}
			if bad {
				t.Fatalf("%q: control %q at %d in %q", text, out[i:i+size], i, out)
			}
			i += size
		}
	})
}
