package stack

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"mime"
	"strings"
	"unicode/utf8"
)

// A mail reaches import as bytes that went through mail clients and archives; what it
// carries is the diff's bytes, exactly. Two layers may sit between them, and are undone
// here, and nothing else:
//
//   - the mail's own line ends. git format-patch writes LF and never puts a CR into a line
//     it makes itself (the From line, the headers, the diff's own lines), so a mail whose
//     first line ends in CRLF had a CR added before every LF on the way (a mail client
//     saving on Windows). Exactly one CR goes from each line, as git mailsplit takes it
//     by default; a line of a CRLF file in the diff arrived as CR CR LF and keeps its CR.
//     A mail whose first line ends in LF keeps every CR: they are the content's (git am's
//     default would strip them too and write the wrong bytes; --keep-cr keeps them).
//   - a quoted-printable or base64 Content-Transfer-Encoding of the body, decoded as git
//     mailinfo decodes it: every decoded byte is kept, CRs included (git am's default
//     --quoted-cr=warn keeps them too).

// mailLineEndsCRLF says whether the mail's own line ends are CRLF: its first line ends in
// CRLF.
func mailLineEndsCRLF(m []byte) bool {
	i := bytes.IndexByte(m, '\n')
	return i > 0 && m[i-1] == '\r'
}

// stripMailCR removes the mail's own line ends from a CRLF mail: one CR before each LF.
// bytes.ReplaceAll matches left to right without overlap, so CR CR LF keeps one CR.
func stripMailCR(m []byte) []byte {
	return bytes.ReplaceAll(m, []byte("\r\n"), []byte("\n"))
}

// decodeTransfer undoes a quoted-printable or base64 Content-Transfer-Encoding of a mail's
// body (m has LF line ends) and marks the header 8bit; it returns the name of the
// encoding it undid, or "". A multipart mail (the patch as an attachment) is refused.
func decodeTransfer(m []byte) ([]byte, string, error) {
	i := bytes.Index(m, []byte("\n\n"))
	if i < 0 {
		return m, "", nil // no body: splitMail says so
	}
	header, body := m[:i+1], m[i+2:]
	if ct := headerValue(header, "Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err == nil && strings.HasPrefix(mt, "multipart/") {
			return nil, "", fmt.Errorf("Content-Type: %s: a multipart mail (the patch as an attachment) is not imported; want the patch inline in a text/plain mail, as git format-patch writes it without --attach", mt)
		}
	}
	var dec []byte
	cte := strings.ToLower(headerValue(header, "Content-Transfer-Encoding"))
	switch cte {
	case "", "7bit", "8bit", "binary":
		return m, "", nil
	case "quoted-printable":
		dec = decodeQuotedPrintable(body)
	case "base64":
		var err error
		if dec, err = decodeBase64(body); err != nil {
			return nil, "", fmt.Errorf("Content-Transfer-Encoding: base64: the body does not decode: %w", err)
		}
	default:
		return nil, "", fmt.Errorf("Content-Transfer-Encoding: %q: want 7bit, 8bit, quoted-printable or base64", cte)
	}
	out := make([]byte, 0, len(header)+1+len(dec))
	out = append(out, setHeader(header, "Content-Transfer-Encoding", "8bit")...)
	out = append(out, '\n')
	return append(out, dec...), cte, nil
}

// decodeQuotedPrintable decodes a quoted-printable body as git mailinfo does: `=XX` is
// the byte XX, `=` at the end of a line joins it to the next (a soft line break), and
// every other byte is kept, a stray `=` and trailing blanks included. (mime/quotedprintable
// drops trailing blanks, as RFC 2045 allows: an empty context line of a diff, one space,
// would lose its space.)
func decodeQuotedPrintable(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		c := b[i]
		if c != '=' {
			out = append(out, c)
			continue
		}
		switch {
		case i+1 == len(b):
			// a final `=`: a soft break with nothing after it
		case b[i+1] == '\n':
			i++
		case i+2 < len(b) && b[i+1] == '\r' && b[i+2] == '\n':
			i += 2
		case i+2 < len(b) && isHex(b[i+1]) && isHex(b[i+2]):
			out = append(out, unhex(b[i+1])<<4|unhex(b[i+2]))
			i += 2
		default:
			out = append(out, c)
		}
	}
	return out
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}

// decodeBase64 decodes a base64 body; line breaks and blanks between the groups are not
// part of it.
func decodeBase64(b []byte) ([]byte, error) {
	clean := make([]byte, 0, len(b))
	for _, c := range b {
		switch c {
		case '\n', '\r', ' ', '\t':
		default:
			clean = append(clean, c)
		}
	}
	out := make([]byte, base64.StdEncoding.DecodedLen(len(clean)))
	n, err := base64.StdEncoding.Decode(out, clean)
	return out[:n], err
}

// setHeader replaces the value of header key (its continuation lines included) in a
// header block with LF line ends.
func setHeader(header []byte, key, value string) []byte {
	lines := strings.SplitAfter(string(header), "\n")
	var b strings.Builder
	for i := 0; i < len(lines); i++ {
		k, _, ok := strings.Cut(lines[i], ":")
		if !ok || !strings.EqualFold(strings.TrimSpace(k), key) {
			b.WriteString(lines[i])
			continue
		}
		for i+1 < len(lines) && (strings.HasPrefix(lines[i+1], " ") || strings.HasPrefix(lines[i+1], "\t")) {
			i++
		}
		b.WriteString(k + ": " + value + "\n")
	}
	return []byte(b.String())
}

// checkHeaderValue refuses a header value that holds a line break or a NUL once decoded
// (an RFC 2047 encoded word can carry `=0A`): written back into the mail, it would end
// the header there and start one of its own.
func checkHeaderValue(key, value string) error {
	if i := strings.IndexAny(value, "\r\n\x00"); i >= 0 {
		return fmt.Errorf("%s: header %q holds a line break or NUL once decoded; refusing it: written back into the mail it would start a header of its own", key, clipValue(value))
	}
	return nil
}

func clipValue(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}

// needsEncodedWords says whether a subject must be written in RFC 2047 encoded words, by
// git format-patch's rule: it holds a byte outside ASCII, a line break, or `=?` (which a
// reader would take for the start of an encoded word).
func needsEncodedWords(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 0x80 || c == '\n' || (c == '=' && i+1 < len(s) && s[i+1] == '?') {
			return true
		}
	}
	return false
}

// encodeSubject writes s as git format-patch writes a subject that needs encoding: UTF-8
// Q encoded words, a blank as =20 (readers that do not know `_` for a blank are many,
// go-gitdiff among them), never splitting a character, each line at most 76 columns with
// its `?=`, continued on a line that starts with a blank. used is the length of the line
// before s (`Subject: [PATCH] `). The imported mail is then what git would write for the
// same commit.
func encodeSubject(s string, used int) string {
	const open, maxLine = "=?UTF-8?q?", 76
	var b strings.Builder
	b.WriteString(open)
	col := used + len(open)
	for len(s) > 0 {
		_, size := utf8.DecodeRuneInString(s)
		ch := s[:size]
		s = s[size:]
		special := size > 1 || ch[0] >= 0x7f || ch[0] <= ' ' || strings.ContainsAny(ch, "=?_")
		n := 1
		if special {
			n = 3 * size
		}
		if col+n+2 > maxLine {
			b.WriteString("?=\n " + open)
			col = 1 + len(open)
		}
		if !special {
			b.WriteString(ch)
		} else {
			for i := 0; i < size; i++ {
				fmt.Fprintf(&b, "=%02X", ch[i])
			}
		}
		col += n
	}
	b.WriteString("?=")
	return b.String()
}
