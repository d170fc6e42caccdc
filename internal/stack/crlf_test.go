package stack

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mpspatch/mpspatch/internal/series"
)

// hostileAmConfig is added to the hostile user config for git am: every setting that
// changes what am writes (the reference run pins each of them on its command line;
// mpspatch, which applies without git, must not care).
const hostileAmConfig = `[am]
	keepcr = true
	threeWay = true
	quotedCr = strip
	messageId = true
[apply]
	whitespace = fix
[core]
	autocrlf = true
	eol = crlf
	safecrlf = false
	whitespace = trailing-space,space-before-tab,blank-at-eof,cr-at-eol
`

// crlfCommit is the upstream change whose mail the differential test imports: it edits
// and adds CRLF lines in a CRLF file, adds a CRLF line to an LF file, creates a CRLF file
// whose last line ends in a bare CR, and touches lines that quoted-printable must encode
// (`=`, trailing blanks, an empty context line, non-ASCII).
var crlfBase = map[string]string{
	"dos.txt": "one\r\ntwo\r\nthree\r\nfour\r\n",
	"lf.txt":  "x = 1\n\nkeep  \ny\n",
}

var crlfChanged = map[string]string{
	"dos.txt": "one\r\nTWO\r\nthree\r\nfour\r\nfive\r\n",
	"lf.txt":  "x = 1\n\nkeep  \ny\nadded with CR\r\nplain = é\n",
	"new.txt": "a = b\r\ncafé\r\ntrailing  \r\n\r\nend\r",
}

// TestImportCRLFMatchesGitAm: a mail whose diff carries CRs — as git format-patch writes
// it (8bit, LF line ends), as a mail client saves it (every line end CRLF), and with a
// base64 or quoted-printable body — is imported and applied by mpspatch to exactly the
// bytes `git am` commits, run under a hostile user config with the mode that keeps the
// content (--keep-cr for an LF mail, --no-keep-cr for a CRLF one, whitespace and quoted
// CRs left alone). git am's default for an LF mail strips the content's CRs too; that
// is checked to still lose bytes, which is why import does not follow it.
func TestImportCRLFMatchesGitAm(t *testing.T) {
	clean := newEnv(t, false)
	up := filepath.Join(t.TempDir(), "up")
	for p, data := range crlfBase {
		write(t, filepath.Join(up, p), data)
	}
	clean.git(up, "init", "-q")
	clean.git(up, "add", "-A")
	clean.git(up, "commit", "-q", "-m", "base")
	for p, data := range crlfChanged {
		write(t, filepath.Join(up, p), data)
	}
	clean.git(up, "add", "-A")
	clean.git(up, "commit", "-q", "-m", "crlf: edit and add lines that end in CR", "-m", "The café file keeps its CRs.")
	for p, want := range crlfChanged {
		if have := gitOut(t, clean, up, "cat-file", "blob", "HEAD:"+p); have != want {
			t.Fatalf("upstream blob %s: %q, want %q (the fixture did not keep its CRs)", p, have, want)
		}
	}
	mail := gitOut(t, clean, up, "format-patch", "--stdout", "-1", "HEAD")
	if !strings.Contains(mail, "\nContent-Transfer-Encoding: 8bit\n") || !strings.Contains(mail, "+added with CR\r\n") {
		t.Fatalf("format-patch did not write an 8bit mail carrying the CRs:\n%s", mail)
	}
	variants := []struct {
		name   string
		mail   string
		amFlag string
	}{
		{"8bit, LF mail", mail, "--keep-cr"},
		{"8bit, CRLF mail", strings.ReplaceAll(mail, "\n", "\r\n"), "--no-keep-cr"},
		{"base64", transferEncode(t, mail, "base64"), "--keep-cr"},
		{"quoted-printable", transferEncode(t, mail, "quoted-printable"), "--keep-cr"},
		{"quoted-printable, CRLF mail", strings.ReplaceAll(transferEncode(t, mail, "quoted-printable"), "\n", "\r\n"), "--no-keep-cr"},
	}
	hostile := newEnv(t, true)
	cfg := filepath.Join(hostile.home, ".gitconfig")
	old, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, append(old, hostileAmConfig...), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "in.mbox")
			write(t, file, v.mail)

			// git am, in a clone at the base, under the hostile config.
			tree := filepath.Join(t.TempDir(), "git")
			clean.git(filepath.Dir(tree), "clone", "-q", up, tree)
			clean.git(tree, "checkout", "-q", "--detach", "HEAD~1")
			am := exec.Command("git", "am", "-q", v.amFlag, "--quoted-cr=nowarn", "--whitespace=nowarn", "--no-3way", file)
			am.Dir, am.Env = tree, hostile.vars
			if out, err := am.CombinedOutput(); err != nil {
				t.Fatalf("git am %s: %v\n%s", v.amFlag, err, out)
			}
			want := map[string]string{}
			for p := range crlfChanged {
				want[p] = gitOut(t, clean, tree, "cat-file", "blob", "HEAD:"+p)
			}
			for p, data := range crlfChanged {
				if want[p] != data {
					t.Errorf("git am wrote %s as %q, not the commit's %q", p, want[p], data)
				}
			}

			// mpspatch: import, then apply to the base.
			have := importAndApply(t, file, up)
			for p := range crlfChanged {
				if have[p] != want[p] {
					t.Errorf("%s: mpspatch wrote %q, git am %q", p, have[p], want[p])
				}
			}
		})
	}

	// git am's own default (no keepcr in the config) strips the content's CRs from an LF
	// mail: the CRLF edit fails or the added CR is lost.
	tree := filepath.Join(t.TempDir(), "default")
	clean.git(filepath.Dir(tree), "clone", "-q", up, tree)
	clean.git(tree, "checkout", "-q", "--detach", "HEAD~1")
	file := filepath.Join(t.TempDir(), "lf.mbox")
	write(t, file, mail)
	am := exec.Command("git", "am", "-q", file)
	am.Dir, am.Env = tree, clean.vars
	if err := am.Run(); err == nil && gitOut(t, clean, tree, "cat-file", "blob", "HEAD:lf.txt") == crlfChanged["lf.txt"] {
		t.Error("git am's default kept the content's CRs: import's choice to differ from it needs a second look")
	}
}

// importAndApply imports the mails of file into a new series and applies it to a tree
// holding up's files at HEAD~1, and returns the files it wrote.
func importAndApply(t *testing.T, file, up string) map[string]string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "series")
	if _, err := Import(context.Background(), ImportOptions{Src: file, Dir: dst}); err != nil {
		t.Fatal(err)
	}
	s, err := series.Load(os.DirFS(dst), ".", dst)
	if err != nil {
		t.Fatal(err)
	}
	tree := t.TempDir()
	for p, data := range crlfBase {
		write(t, filepath.Join(tree, p), data)
	}
	if _, err := series.Apply(openRoot(t, tree), s, series.Options{}); err != nil {
		t.Fatal(err)
	}
	have := map[string]string{}
	for p := range crlfChanged {
		have[p] = read(t, filepath.Join(tree, p))
	}
	return have
}

// gitOut runs git and returns its stdout untrimmed (blob bytes).
func gitOut(t *testing.T, e *env, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir, cmd.Env = dir, e.vars
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, errb.String())
	}
	return out.String()
}

// transferEncode re-encodes the body of an 8bit mail (LF line ends) as a mail client
// sending it with that Content-Transfer-Encoding would.
func transferEncode(t *testing.T, mail, enc string) string {
	t.Helper()
	header, body, ok := strings.Cut(mail, "\n\n")
	if !ok || !strings.Contains(header, "\nContent-Transfer-Encoding: 8bit") {
		t.Fatalf("not an 8bit mail:\n%s", mail)
	}
	header = strings.Replace(header, "Content-Transfer-Encoding: 8bit", "Content-Transfer-Encoding: "+enc, 1)
	switch enc {
	case "base64":
		return header + "\n\n" + base64Encode(body)
	case "quoted-printable":
		return header + "\n\n" + qpEncode(body)
	}
	t.Fatalf("encoding %s", enc)
	return ""
}

// base64Encode and qpEncode are written here, independently of import's decoders.
// base64 lines are 76 characters.
func base64Encode(body string) string {
	var b strings.Builder
	s := base64.StdEncoding.EncodeToString([]byte(body))
	for len(s) > 76 {
		b.WriteString(s[:76] + "\n")
		s = s[76:]
	}
	b.WriteString(s + "\n")
	return b.String()
}

// qpEncode encodes CR, `=`, a blank that ends a line and every byte outside printable
// ASCII, and breaks lines longer than 76 characters with a soft line break.
func qpEncode(body string) string {
	var b strings.Builder
	for _, line := range strings.SplitAfter(body, "\n") {
		content := strings.TrimSuffix(line, "\n")
		var l strings.Builder
		for i := 0; i < len(content); i++ {
			c := content[i]
			last := i == len(content)-1
			if c == '=' || c == '\r' || c > '~' || (c < ' ' && c != '\t') || (last && (c == ' ' || c == '\t')) {
				fmt.Fprintf(&l, "=%02X", c)
			} else {
				l.WriteByte(c)
			}
		}
		s := l.String()
		for len(s) > 75 {
			cut := 75
			for cut > 72 && strings.Contains(s[cut-2:cut], "=") {
				cut-- // never split an =XX
			}
			b.WriteString(s[:cut] + "=\n")
			s = s[cut:]
		}
		b.WriteString(s)
		if strings.HasSuffix(line, "\n") {
			b.WriteString("\n")
		}
	}
	return b.String()
}

// FuzzDecodeTransfer: a body encoded in quoted-printable or base64 decodes to its exact
// bytes (CRs, blanks and all), the header then saying 8bit; and decoding any input never
// panics.
func FuzzDecodeTransfer(f *testing.F) {
	f.Add([]byte("diff --git a/x b/x\n+a = b\r\n \n+caf\xc3\xa9  \n"), []byte("=0D=\n=ZZ"))
	f.Add([]byte(strings.Repeat("x=", 100)+"\n"), []byte("Zm9v\nYmFy\n"))
	f.Fuzz(func(t *testing.T, body, junk []byte) {
		for _, enc := range []string{"quoted-printable", "base64"} {
			header := "From: A <a@b>\nContent-Transfer-Encoding: " + enc + "\n"
			encoded := qpEncode(string(body))
			if enc == "base64" {
				encoded = base64Encode(string(body))
			}
			out, which, err := decodeTransfer([]byte(header + "\n" + encoded))
			if err != nil || which != enc {
				t.Fatalf("%s: %v (%q)", enc, err, which)
			}
			want := "From: A <a@b>\nContent-Transfer-Encoding: 8bit\n\n" + string(body)
			if string(out) != want {
				t.Fatalf("%s: have %q, want %q", enc, out, want)
			}
			_, _, _ = decodeTransfer([]byte(header + "\n" + string(junk)))
		}
	})
}
