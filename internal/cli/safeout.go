package cli

import (
	"bytes"
	"fmt"
	"io"
	"sync"
	"unicode/utf8"

	"github.com/mpspatch/mpspatch/internal/redact"
)

// safeWriter is how every byte of text reaches stdout and stderr: the one place where
// output made of untrusted strings (patch subjects, file names, an interpreter's or git's
// output, URLs from the config) is made safe to show. It takes credentials out of URLs
// (internal/redact) and shows control characters (C0 but tab and newline, DEL, C1, ESC)
// as escapes, so a subject cannot move the cursor, retitle the terminal, write the
// clipboard (OSC 52) or hide text. mpspatch's own sequences pass: the colours Paint uses
// where colour is on, and the "\r ESC[K" that redraws a progress line on a terminal. A
// string that spells one of those exact sequences can still colour or clear a line; it
// cannot do more than a newline in it already could.
//
// Under --json, stdout carries JSON the printer has redacted (redact.JSON: strings only,
// so the documents stay valid) and whose control characters the encoder escaped; it
// passes through untouched.
type safeWriter struct {
	mu   sync.Mutex
	w    io.Writer
	red  *redact.Writer // into esc
	esc  *escaper       // into w
	json bool
}

func newSafeWriter(w io.Writer, redraw, color bool) *safeWriter {
	esc := &escaper{w: w, redraw: redraw, color: color}
	return &safeWriter{w: w, red: redact.NewWriter(esc), esc: esc}
}

// setJSON makes the stream pass JSON documents through as they are (see safeWriter).
func (s *safeWriter) setJSON(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.json = on
}

// setColor says whether Paint's colours pass (see IOStreams.colorOn), once --color is known.
func (s *safeWriter) setColor(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.esc.color = on
}

func (s *safeWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.json {
		if err := s.flush(); err != nil {
			return 0, err
		}
		return s.w.Write(p)
	}
	return s.red.Write(p)
}

// writeTrusted writes b as it is, after what the filters hold: for a document that was
// redacted as JSON (audit --format sarif), which text redaction could only spoil.
func (s *safeWriter) writeTrusted(b []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.flush(); err != nil {
		return err
	}
	_, err := s.w.Write(b)
	return err
}

// Flush writes what the filters hold back (a URL or an escape sequence cut by a write).
func (s *safeWriter) Flush() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.flush()
}

func (s *safeWriter) flush() error {
	if err := s.red.Flush(); err != nil {
		return err
	}
	return s.esc.Flush()
}

// escaper shows control characters as escapes (see safeWriter), holding back the end of
// a write that may be the start of an allowed sequence or of a multi-byte character.
type escaper struct {
	w      io.Writer
	redraw bool // "\r\x1b[K" passes
	color  bool // Paint's colours pass
	held   []byte
}

func (e *escaper) Write(p []byte) (int, error) {
	buf := p
	if len(e.held) > 0 {
		buf = append(e.held, p...)
	}
	cut := e.holdFrom(buf)
	out := escapeControls(buf[:cut], e.redraw, e.color)
	e.held = append(e.held[:0:0], buf[cut:]...)
	if len(out) > 0 {
		if _, err := e.w.Write(out); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

func (e *escaper) Flush() error {
	if len(e.held) == 0 {
		return nil
	}
	out := escapeControls(e.held, e.redraw, e.color)
	e.held = nil
	_, err := e.w.Write(out)
	return err
}

// holdFrom is where the end of buf that must wait for the next write starts: a proper
// prefix of an allowed sequence, or an unfinished UTF-8 character (a C1 control is one).
func (e *escaper) holdFrom(buf []byte) int {
	cut := len(buf)
	if e.redraw || e.color {
		for k := min(len(buf), maxAllowedLen-1); k > 0; k-- {
			if tail := buf[len(buf)-k:]; (tail[0] == '\r' || tail[0] == 0x1b) && e.prefixOfAllowed(tail) {
				cut = len(buf) - k
				break
			}
		}
	}
	for i := len(buf) - 1; i >= 0 && i >= len(buf)-utf8.UTFMax; i-- {
		if c := buf[i]; c < 0x80 || c >= 0xc0 {
			if c >= 0xc0 && !utf8.FullRune(buf[i:]) {
				cut = min(cut, i)
			}
			break
		}
	}
	return cut
}

// allowedColors are the SGR codes Paint and paintErr write.
var allowedColors = []string{"\x1b[0m", "\x1b[1m", "\x1b[2m", "\x1b[31m", "\x1b[32m", "\x1b[33m"}

// redrawLine is what a progress line on a terminal starts with: back to the start of the
// line, and clear it.
const redrawLine = "\r\x1b[K"

const maxAllowedLen = 5 // len("\x1b[31m"), len(redrawLine) is 4

func (e *escaper) allowed() []string {
	var seqs []string
	if e.redraw {
		seqs = append(seqs, redrawLine)
	}
	if e.color {
		seqs = append(seqs, allowedColors...)
	}
	return seqs
}

func (e *escaper) prefixOfAllowed(b []byte) bool {
	for _, s := range e.allowed() {
		if len(b) < len(s) && bytes.HasPrefix([]byte(s), b) {
			return true
		}
	}
	return false
}

// escapeControls returns b with every control character but tab and newline written as
// an escape (\x1b, \x07, \u009b), except mpspatch's own sequences where allowed.
func escapeControls(b []byte, redraw, color bool) []byte {
	if !needsEscape(b) {
		return b
	}
	var allowed []string
	if redraw {
		allowed = append(allowed, redrawLine)
	}
	if color {
		allowed = append(allowed, allowedColors...)
	}
	out := make([]byte, 0, len(b)+16)
next:
	for i := 0; i < len(b); {
		c := b[i]
		switch {
		case c == '\r' || c == 0x1b:
			for _, s := range allowed {
				if bytes.HasPrefix(b[i:], []byte(s)) {
					out = append(out, s...)
					i += len(s)
					continue next
				}
			}
			out = fmt.Appendf(out, `\x%02x`, c)
			i++
		case c < 0x20 && c != '\t' && c != '\n' || c == 0x7f:
			out = fmt.Appendf(out, `\x%02x`, c)
			i++
		case c >= 0x80:
			r, size := utf8.DecodeRune(b[i:])
			switch {
			case r == utf8.RuneError && size == 1 && c <= 0x9f:
				// A raw C1 byte: an 8-bit terminal takes 0x9b for ESC [.
				out = fmt.Appendf(out, `\x%02x`, c)
			case r >= 0x80 && r <= 0x9f:
				out = fmt.Appendf(out, `\u%04x`, r)
			default:
				out = append(out, b[i:i+size]...)
			}
			i += size
		default:
			out = append(out, c)
			i++
		}
	}
	return out
}

// needsEscape says whether b holds anything escapeControls would look at twice.
func needsEscape(b []byte) bool {
	for _, c := range b {
		if c < 0x20 && c != '\t' && c != '\n' || c >= 0x7f {
			return true
		}
	}
	return false
}
