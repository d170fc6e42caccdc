package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/mpspatch/mpspatch/internal/redact"
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
	// safe is the filter under out (see safeWriter), for documents that must bypass its
	// text rules; nil when out is not filtered (tests).
	safe *safeWriter
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

// RawResult is Result for a command whose encoder writes the JSON itself (audit's report,
// SARIF): in --json mode the bytes are kept, checked, and written by Main like any result.
// The document is redacted as JSON (its strings only), never as text, so it stays valid.
func (p *printer) RawResult(write func(w io.Writer) error) error {
	var buf bytes.Buffer
	if err := write(&buf); err != nil {
		return err
	}
	doc := redact.JSON(buf.Bytes())
	if !p.json || p.sink == nil {
		if p.safe != nil {
			return p.safe.writeTrusted(doc)
		}
		_, err := p.out.Write(doc)
		return err
	}
	if !json.Valid(doc) {
		return fmt.Errorf("internal error: the result is not valid JSON")
	}
	p.sink.pending, p.sink.hasPending = json.RawMessage(bytes.TrimSpace(doc)), true
	return nil
}

// JSONLine writes v as a single line of JSON (for streams of results).
func (p *printer) JSONLine(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	b = redact.JSON(b)
	if p.sink != nil {
		p.sink.lineBytes += len(b) + 1
	}
	_, err = p.out.Write(append(b, '\n'))
	return err
}

// Stream marks this command's --json output as JSON Lines (verify): a failure then ends the
// stream with a one-line summary record that carries the error.
func (p *printer) Stream() {
	if p.sink != nil {
		p.sink.streaming = true
	}
}

// StreamSummary writes the summary record that ends a JSON Lines stream. Main writes it
// after the command returns, so that a failure's error lands in it rather than after it.
func (p *printer) StreamSummary(v any) error {
	if p.sink == nil {
		return p.JSONLine(v)
	}
	p.sink.streaming = true
	p.sink.pending, p.sink.hasPending = v, true
	return nil
}

// encodeDocument writes v as one indented JSON document, credentials taken out of its
// strings (redact.JSON): every --json document passes here or through JSONLine.
func encodeDocument(w io.Writer, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(redact.JSON(buf.Bytes()))
	return err
}

// resultSink is stdout under --json: it keeps the one result document a command produced
// (written by finish) and remembers the JSON Lines a streaming command wrote, so that a
// failure always ends stdout with a document that says what went wrong.
type resultSink struct {
	pending    any
	hasPending bool
	streaming  bool // JSON Lines: the pending value is the closing summary line
	lineBytes  int  // bytes JSONLine wrote
	out        *countingWriter
}

// countingWriter is stdout, counting what passes, so finish can tell whether a command
// wrote to stdout behind the printer's back.
type countingWriter struct {
	w io.Writer
	n int
}

func (c *countingWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += n
	return n, err
}

// wrap makes w the sink's stdout and returns the writer commands are to use.
func (s *resultSink) wrap(w io.Writer) io.Writer {
	s.out = &countingWriter{w: w}
	return s.out
}

// strayOutput says whether something other than JSONLine wrote to stdout.
func (s *resultSink) strayOutput() bool { return s.out != nil && s.out.n > s.lineBytes }

// errorBody is the "error" member of every --json failure (docs/exit-codes.md).
type errorBody struct {
	Code    int            `json:"code"`
	Name    string         `json:"name"`
	Message string         `json:"message"`
	Details map[string]any `json:"details"`
}

// finish writes what a command left under --json: on success its result; on failure its
// partial result with an "error" member added, or {"error": ...} alone when it had none. A
// JSON Lines stream ends with its summary line, the error added on failure, or with
// {"type": "summary", "status": "error", "error": ...} when it failed before a summary.
func (s *resultSink) finish(w io.Writer, failure *errorBody) error {
	write := encodeDocument
	if s.streaming {
		write = encodeLine
	}
	if failure == nil {
		if s.hasPending {
			return write(w, s.pending)
		}
		return nil
	}
	if !s.hasPending {
		if s.strayOutput() {
			// A document (or text) is already out; a second one would break parsers.
			return nil
		}
		doc := map[string]any{"error": failure}
		if s.streaming {
			doc["type"], doc["status"] = "summary", "error"
		}
		return write(w, doc)
	}
	b, err := json.Marshal(s.pending)
	if err != nil {
		return err
	}
	merged, err := withErrorMember(b, failure)
	if err != nil {
		return err
	}
	return write(w, merged)
}

// withErrorMember adds "error": failure to the JSON object b, keeping b's members in their
// order. A string "error" member b already has (a command's own one-line reason) is
// replaced, and becomes the message when the failure had none of its own. A b that is not
// an object is wrapped: {"result": b, "error": failure}.
func withErrorMember(b []byte, failure *errorBody) (json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return json.Marshal(map[string]any{"result": json.RawMessage(b), "error": failure})
	}
	var out bytes.Buffer
	out.WriteByte('{')
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := t.(string)
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return nil, err
		}
		if key == "error" {
			var reason string
			if json.Unmarshal(val, &reason) == nil && failure.Message == codeSummaries[failure.Code] {
				failure.Message = reason
			}
			continue
		}
		k, _ := json.Marshal(key)
		out.Write(k)
		out.WriteByte(':')
		out.Write(val)
		out.WriteByte(',')
	}
	e, err := json.Marshal(failure)
	if err != nil {
		return nil, err
	}
	out.WriteString(`"error":`)
	out.Write(e)
	out.WriteByte('}')
	return out.Bytes(), nil
}

func encodeLine(w io.Writer, v any) error {
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(v); err != nil {
		return err
	}
	_, err := w.Write(redact.JSON(buf.Bytes()))
	return err
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

// columnWriter lines up tab-separated cells like text/tabwriter, but measures cells by
// visible width, so a coloured cell and a plain one in the same column stay aligned
// (tabwriter counts the bytes of ANSI escapes). Write lines, then Flush.
type columnWriter struct {
	w   io.Writer
	gap int
	buf bytes.Buffer
}

func newColumnWriter(w io.Writer, gap int) *columnWriter { return &columnWriter{w: w, gap: gap} }

func (c *columnWriter) Write(b []byte) (int, error) { return c.buf.Write(b) }

// Flush writes the buffered lines with every column but the last padded to its widest cell.
func (c *columnWriter) Flush() error {
	text := strings.TrimSuffix(c.buf.String(), "\n")
	c.buf.Reset()
	if text == "" {
		return nil
	}
	var rows [][]string
	var widths []int
	for _, line := range strings.Split(text, "\n") {
		cells := strings.Split(line, "\t")
		rows = append(rows, cells)
		for i, cell := range cells[:len(cells)-1] {
			if i == len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], visibleWidth(cell))
		}
	}
	var out strings.Builder
	for _, cells := range rows {
		for i, cell := range cells[:len(cells)-1] {
			out.WriteString(pad(cell, widths[i]+c.gap))
		}
		out.WriteString(cells[len(cells)-1])
		out.WriteByte('\n')
	}
	_, err := io.WriteString(c.w, out.String())
	return err
}
