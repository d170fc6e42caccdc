package cli

import (
	"encoding/json"
	"fmt"
	"io"
)

// printer is the one place results and progress are written. In --json mode results are
// JSON documents on stdout and progress stays on stderr, so `mpspatch x --json | jq` works.
type printer struct {
	out, err io.Writer
	json     bool
	color    bool // colour on stdout
	colorErr bool
	quiet    bool
}

func newPrinter(s IOStreams, jsonOut, quiet bool) *printer {
	return &printer{out: s.Out, err: s.Err, json: jsonOut, color: s.ColorOut(), colorErr: s.ColorErr(), quiet: quiet}
}

// Result writes v as one JSON value in --json mode, or calls text otherwise.
func (p *printer) Result(v any, text func(w io.Writer)) error {
	if p.json {
		enc := json.NewEncoder(p.out)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	text(p.out)
	return nil
}

// JSONLine writes v as a single line of JSON (for streams of results).
func (p *printer) JSONLine(v any) error {
	return json.NewEncoder(p.out).Encode(v)
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
