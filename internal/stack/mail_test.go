package stack

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mpspatch/mpspatch/internal/series"
)

// mailWith is plainMail with its Subject: and From: lines replaced.
func mailWith(subject, from string) string {
	m := strings.Replace(plainMail, "Subject: [PATCH] edit a\n", subject, 1)
	return strings.Replace(m, "From: Patch Author <author@example.com>\n", from, 1)
}

const plainFrom = "From: Patch Author <author@example.com>\n"

// TestImportRefusesHeaderInjection: a header that decodes to a line break (an RFC 2047
// encoded word carrying =0A, a base64 word carrying CR LF, a bare CR) is refused by
// import: written back into the mail, it would start a header of its own. Nothing is
// written, and lint refuses such a subject in a series too.
func TestImportRefusesHeaderInjection(t *testing.T) {
	cases := []struct{ name, mail, want string }{
		{"Q-encoded LF in Subject", mailWith("Subject: [PATCH] =?UTF-8?q?fix=0AX-Injected:_yes?=\n", plainFrom), "Subject: header"},
		{"B-encoded CRLF in Subject", mailWith("Subject: [PATCH] =?UTF-8?b?Zml4DQpYLUluamVjdGVkOiB5ZXM=?=\n", plainFrom), "Subject: header"},
		{"folded encoded words", mailWith("Subject: [PATCH] =?UTF-8?q?fix?=\n =?UTF-8?q?=0AX-Injected:_yes?=\n", plainFrom), "Subject: header"},
		{"lowercase header name", mailWith("SUBJECT: [PATCH] =?utf-8?Q?fix=0AX-Injected:_yes?=\n", plainFrom), "Subject: header"},
		{"bare CR in Subject", mailWith("Subject: [PATCH] fix\rX-Injected: yes\n", plainFrom), "Subject: header"},
		{"encoded LF in the From name", mailWith("Subject: [PATCH] edit a\n", "From: =?UTF-8?q?Patch=0AX-Injected=3A_yes?= <author@example.com>\n"), "From: header"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			src, dst := filepath.Join(dir, "in.mbox"), filepath.Join(dir, "dst")
			write(t, src, c.mail)
			_, err := Import(context.Background(), ImportOptions{Src: src, Dir: dst})
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "line break") {
				t.Errorf("have %v, want a refusal of the %s", err, c.want)
			}
			if _, err := os.Stat(dst); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("import wrote %s", dst)
			}
		})
	}
	// The same subject planted in a series is a lint problem.
	p := &series.Patch{Name: "0001-x.patch", Raw: []byte(mailWith("Subject: [PATCH] =?UTF-8?q?fix=0AX-Injected:_yes?=\n", plainFrom))}
	probs := series.ParsePatch(p)
	if len(probs) == 0 || !strings.Contains(probs[0].String(), "line break") {
		t.Errorf("lint: have %v, want the subject refused", probs)
	}
}

// TestImportDecodesEncodedSubject: a subject in RFC 2047 encoded words is decoded once,
// and written back encoded when it is not ASCII, so the imported mail says the same.
func TestImportDecodesEncodedSubject(t *testing.T) {
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "in.mbox"), filepath.Join(dir, "dst")
	write(t, src, mailWith("Subject: [PATCH 2/3] =?UTF-8?q?caf=C3=A9:_lock?=\n =?UTF-8?q?_the_stream?=\n", plainFrom))
	res, err := Import(context.Background(), ImportOptions{Src: src, Dir: dst})
	if err != nil {
		t.Fatal(err)
	}
	if res.Patches[0].Subject != "café: lock the stream" {
		t.Errorf("subject %q", res.Patches[0].Subject)
	}
	s, err := series.Load(os.DirFS(dst), ".", dst)
	if err != nil {
		t.Fatal(err)
	}
	if s.Patches[0].Title != "café: lock the stream" {
		t.Errorf("series title %q", s.Patches[0].Title)
	}
}

// TestNormaliseMailLineEnds: the mail's own CRLF line ends go (one CR a line), the
// content's CRs stay; an LF mail keeps every CR.
func TestNormaliseMailLineEnds(t *testing.T) {
	lfMail := strings.Replace(plainMail, "+TWO\n", "+TWO\r\n", 1)
	out, _, notes, err := NormaliseMail([]byte(lfMail))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(out, []byte("\n+TWO\r\n")) || strings.Contains(strings.Join(notes, ";"), "CRLF") {
		t.Errorf("LF mail: the content's CR was touched (notes %q):\n%q", notes, out)
	}
	crlfMail := strings.ReplaceAll(lfMail, "\n", "\r\n") // +TWO now ends CR CR LF
	out2, _, notes, err := NormaliseMail([]byte(crlfMail))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out2, out) || !strings.Contains(strings.Join(notes, ";"), "CRLF line ends made LF") {
		t.Errorf("CRLF mail: have %q (notes %q), want %q", out2, notes, out)
	}
	// A CRLF mbox splits into its mails, the blank line between them going with the CRLF.
	mbox := strings.ReplaceAll(plainMail+"\n"+plainMail, "\n", "\r\n")
	mails := splitMbox([]byte(mbox))
	if len(mails) != 2 || string(mails[0]) != strings.ReplaceAll(plainMail, "\n", "\r\n") {
		t.Errorf("CRLF mbox: %d mails: %q", len(mails), mails)
	}
}

func TestDecodeQuotedPrintable(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"a=3Db\n", "a=b\n"},
		{"x=0D\n", "x\r\n"},
		{"soft=\nbreak\n", "softbreak\n"},
		{"soft=\r\nbreak\n", "softbreak\n"},
		{" \n", " \n"},            // a blank context line keeps its blank (git does)
		{"a=ZZ b\n", "a=ZZ b\n"},  // a stray = is kept
		{"caf=C3=a9\n", "café\n"}, // lowercase hex too
		{"end=", "end"},
	} {
		if have := string(decodeQuotedPrintable([]byte(c.in))); have != c.want {
			t.Errorf("%q: have %q, want %q", c.in, have, c.want)
		}
	}
}

// TestDecodeTransferRefuses: what import cannot read as the diff's bytes is refused.
func TestDecodeTransferRefuses(t *testing.T) {
	withHeader := func(h string) []byte {
		return []byte(strings.Replace(plainMail, "Subject: [PATCH] edit a\n", "Subject: [PATCH] edit a\n"+h, 1))
	}
	for _, c := range []struct {
		name string
		mail []byte
		want string
	}{
		{"multipart", withHeader("Content-Type: multipart/mixed; boundary=x\n"), "multipart"},
		{"unknown encoding", withHeader("Content-Transfer-Encoding: x-uuencode\n"), "want 7bit, 8bit"},
		{"bad base64", withHeader("Content-Transfer-Encoding: base64\n"), "base64"},
	} {
		if _, _, _, err := NormaliseMail(c.mail); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: have %v, want %q", c.name, err, c.want)
		}
	}
}

// TestImportRefusesIDPast9999: IDs have four digits; import never writes 10000, which
// the series format (and check) would refuse, and writes nothing.
func TestImportRefusesIDPast9999(t *testing.T) {
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "in.mbox"), filepath.Join(dir, "dst")
	// Two different changes (the same one twice would be refused as a duplicate first).
	write(t, src, plainMail+"\n"+strings.Replace(plainMail, "+TWO\n", "+Two\n", 1))
	order := "# retired: 9998\n"
	write(t, filepath.Join(dst, "series"), order)
	_, err := Import(context.Background(), ImportOptions{Src: src, Dir: dst})
	if err == nil || !strings.Contains(err.Error(), "in.mbox mail 2: no ID left") || !strings.Contains(err.Error(), "0001-9999") {
		t.Errorf("have %v, want mail 2 refused: no ID past 9999", err)
	}
	if have := dirFiles(t, dst); len(have) != 1 || have["series"] != order {
		t.Errorf("import wrote something: %v", have)
	}
	// One mail still fits, as 9999, and the series loads.
	write(t, src, plainMail)
	res, err := Import(context.Background(), ImportOptions{Src: src, Dir: dst})
	if err != nil {
		t.Fatal(err)
	}
	if res.Patches[0].Name != "9999-edit-a.patch" {
		t.Errorf("imported as %s", res.Patches[0].Name)
	}
	if _, err := series.Load(os.DirFS(dst), ".", dst); err != nil {
		t.Errorf("the series with 9999 does not load: %v", err)
	}
}

// FuzzSplitMbox: splitting never panics, each mail starts with its From line and is a
// piece of the input, in order.
func FuzzSplitMbox(f *testing.F) {
	f.Add([]byte(plainMail + "\n" + plainMail))
	f.Add([]byte(strings.ReplaceAll(plainMail+"\n"+plainMail, "\n", "\r\n")))
	f.Add([]byte("junk\n" + plainMail))
	f.Fuzz(func(t *testing.T, data []byte) {
		at := 0
		for _, m := range splitMbox(data) {
			if !bytes.HasPrefix(m, []byte("From ")) {
				t.Fatalf("mail does not start with its From line: %q", m)
			}
			i := bytes.Index(data[at:], m)
			if i < 0 {
				t.Fatalf("mail %q is not a piece of the input after offset %d", m, at)
			}
			at += i + len(m)
		}
		if _, err := mailsOf(data, "in.mbox", true); err != nil && len(data) <= series.MaxPatchSize {
			t.Fatalf("mailsOf: %v", err)
		}
	})
}

// FuzzNormaliseMail: normalising any mail never panics; what it accepts has its subject
// on one line, holds no header line that the input did not (no injection), and reads
// back with the subject it reported.
func FuzzNormaliseMail(f *testing.F) {
	f.Add([]byte(plainMail))
	f.Add([]byte(strings.ReplaceAll(plainMail, "\n", "\r\n")))
	f.Add([]byte(mailWith("Subject: [PATCH] =?UTF-8?q?fix=0AX-Injected:_yes?=\n", plainFrom)))
	f.Add([]byte(mailWith("Subject: [PATCH v2 1/2] =?UTF-8?q?caf=C3=A9?=\n =?UTF-8?b?IGxvY2s=?=\n", plainFrom)))
	f.Add([]byte(strings.Replace(plainMail, "Subject: [PATCH] edit a\n", "Subject: [PATCH] edit a\nContent-Transfer-Encoding: quoted-printable\n", 1)))
	f.Add([]byte(strings.Replace(plainMail, "Subject: [PATCH] edit a\n", "Subject: [PATCH] edit a\nContent-Transfer-Encoding: base64\n", 1)))
	f.Fuzz(func(t *testing.T, raw []byte) {
		out, subject, _, err := NormaliseMail(raw)
		if err != nil {
			return
		}
		if strings.ContainsAny(subject, "\r\n") {
			t.Fatalf("subject %q holds a line break", subject)
		}
		parts, err := splitMail(out)
		if err != nil {
			return
		}
		for _, l := range strings.Split(string(parts.header), "\n") {
			if strings.HasPrefix(strings.ToLower(l), "x-injected:") && !bytes.Contains(bytes.ToLower(raw), []byte("\nx-injected:")) {
				t.Fatalf("a header appeared: %q", l)
			}
		}
		mm, err := parseMailMessage(out)
		if err != nil {
			t.Fatalf("the normalised mail does not read back: %v\n%q", err, out)
		}
		if mm.Subject != subject {
			t.Fatalf("read back as %q, reported %q", mm.Subject, subject)
		}
	})
}

// TestEncodeSubjectMatchesGit: a subject that needs encoded words is written as git
// format-patch writes it, folding included, so that an imported mail is byte for byte
// the mail export writes for the same commit.
func TestEncodeSubjectMatchesGit(t *testing.T) {
	e := newEnv(t, false)
	up := filepath.Join(t.TempDir(), "up")
	write(t, filepath.Join(up, "a.txt"), "0\n")
	e.git(up, "init", "-q")
	e.git(up, "add", "-A")
	e.git(up, "commit", "-q", "-m", "base")
	subjects := []string{
		"café: lock the stream and a very long subject line that goes on and on to force folding of the words",
		"é_x?y=z and a tab\there",
		strings.Repeat("é", 45),
		strings.Repeat("x", 60) + "é" + strings.Repeat("y", 30),
		"plain =?UTF-8?q?x?= looking like a word",
		"a\x7fdel and \x01 control é",
	}
	for i, subj := range subjects {
		write(t, filepath.Join(up, "a.txt"), strings.Repeat("x\n", i+1))
		e.git(up, "commit", "-q", "-a", "--cleanup=verbatim", "-m", subj)
		mail := gitOut(t, e, up, "format-patch", "--stdout", "-1", "HEAD")
		loc := subjectLineRE().FindStringIndex(mail)
		if loc == nil {
			t.Fatalf("no Subject in\n%s", mail)
		}
		want := mail[loc[0]:loc[1]]
		if !needsEncodedWords(subj) {
			t.Fatalf("%q: git encoded it, needsEncodedWords says no", subj)
		}
		if have := "Subject: [PATCH] " + encodeSubject(subj, len("Subject: [PATCH] ")) + "\n"; have != want {
			t.Errorf("%q:\nhave %q\nwant %q", subj, have, want)
		}
		// Import keeps git's Subject lines as they are, and reads the subject back.
		out, got, notes, err := NormaliseMail([]byte(mail))
		if err != nil {
			t.Fatal(err)
		}
		if got != subj || !strings.Contains(string(out), want) || strings.Contains(strings.Join(notes, ";"), "subject") {
			t.Errorf("%q: imported as %q (notes %q)", subj, got, notes)
		}
	}
}
