package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// printer is the one place results and progress are written. In --json mode results are
// JSON documents on stdout and progress stays on stderr, so `mpspatch x --json | jq` works.
type printer struct {
	out, err io.Writer
	json     bool
	color    bool // colour on stdout
	colorErr bool
	quiet    bool
	// sink, when set, holds the --json result until the command has returned, so that Main
	// can write exactly one document: the result, or the result with the error added.
	sink *resultSink
}

func newPrinter(s IOStreams, jsonOut, quiet bool) *printer {
	return &printer{out: s.Out, err: s.Err, json: jsonOut, color: s.ColorOut(), colorErr: s.ColorErr(), quiet: quiet}
}

// Result writes v as one JSON value in --json mode, or calls text otherwise.
func (p *printer) Result(v any, text func(w io.Writer)) error {
	if p.json {
		if p.sink != nil {
			p.sink.pending, p.sink.hasPending = v, true
			return nil
		}
		return encodeDocument(p.out, v)
	}
	text(p.out)
	return nil
}

// JSONLine writes v as a single line of JSON (for streams of results).
func (p *printer) JSONLine(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if p.sink != nil {
		p.sink.noteLine(b)
	}
	_, err = p.out.Write(append(b, '\n'))
	return err
}

func encodeDocument(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// resultSink is stdout under --json: it keeps the one result document a command produced
// (written by finish) and remembers the JSON Lines a streaming command wrote, so that a
// failure always ends stdout with a document that says what went wrong.
type resultSink struct {
	pending    any
	hasPending bool
	lines      int
	lastType   string // the "type" of the last JSON line ("summary" ends a verify stream)
}

func (s *resultSink) noteLine(b []byte) {
	var rec struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(b, &rec)
	s.lines++
	s.lastType = rec.Type
}

// errorBody is the "error" member of every --json failure (docs/exit-codes.md).
type errorBody struct {
	Code    int            `json:"code"`
	Name    string         `json:"name"`
	Message string         `json:"message"`
	Details map[string]any `json:"details"`
}

// finish writes what a command left under --json: on success its result; on failure its
// partial result with an "error" member added, or {"error": ...} alone when it had none; a
// stream of JSON Lines that did not end with its summary gets a summary line carrying the
// error. It never writes a second document after a complete one.
func (s *resultSink) finish(w io.Writer, failure *errorBody) error {
	if failure == nil {
		if s.hasPending {
			return encodeDocument(w, s.pending)
		}
		return nil
	}
	if s.lines > 0 && !s.hasPending {
		if s.lastType == "summary" && failure.Code != ExitInterrupted && failure.Message == codeSummaries[failure.Code] {
			return nil // the summary already says why the run failed
		}
		b, err := json.Marshal(map[string]any{"type": "summary", "status": "error", "error": failure})
		if err != nil {
			return err
		}
		_, err = w.Write(append(b, '\n'))
		return err
	}
	doc := map[string]any{}
	if s.hasPending {
		b, err := json.Marshal(s.pending)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(b, &doc); err != nil || doc == nil {
			doc = map[string]any{"result": json.RawMessage(b)}
		}
	}
	doc["error"] = failure
	return encodeDocument(w, doc)
}

// pad pads s with spaces to width visible characters: ANSI colour codes take no room on
// a terminal, so fmt's %-12s would misalign a coloured column.
func pad(s string, width int) string {
	if n := visibleWidth(s); n < width {
		return s + strings.Repeat(" ", width-n)
	}
	return s
}

// visibleWidth counts the runes of s outside ANSI escape sequences (ESC [ ... letter).
func visibleWidth(s string) int {
	n := 0
	b := []byte(s)
	for i := 0; i < len(b); {
		if b[i] == 0x1b && i+1 < len(b) && b[i+1] == '[' {
			j := i + 2
			for j < len(b) && !(b[j] >= 0x40 && b[j] <= 0x7e) {
				j++
			}
			i = j + 1
			continue
		}
		_, size := utf8.DecodeRune(b[i:])
		i += size
		n++
	}
	return n
}

// Progressf writes a progress line to stderr unless --quiet.
func (p *printer) Progressf(format string, args ...any) {
	if p.quiet {
		return
	}
	fmt.Fprintf(p.err, format+"\n", args...)
}

// Warnf writes a warning to stderr, even with --quiet.
func (p *printer) Warnf(format string, args ...any) {
	fmt.Fprintf(p.err, "%s "+format+"\n", append([]any{p.paintErr(yellow, "warning:")}, args...)...)
}

type colour string

const (
	red    colour = "31"
	green  colour = "32"
	yellow colour = "33"
	bold   colour = "1"
	dim    colour = "2"
)

// Paint colours s for stdout when colour is allowed.
func (p *printer) Paint(c colour, s string) string {
	if !p.color {
		return s
	}
	return "\x1b[" + string(c) + "m" + s + "\x1b[0m"
}

func (p *printer) paintErr(c colour, s string) string {
	if !p.colorErr {
		return s
	}
	return "\x1b[" + string(c) + "m" + s + "\x1b[0m"
}
