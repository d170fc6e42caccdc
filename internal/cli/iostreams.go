package cli

import (
	"io"
	"os"
	"strings"
)

// IOStreams are the three standard streams plus what is known about them. Tests pass
// buffers; Main's caller passes the process's streams.
type IOStreams struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer

	// OutTTY and ErrTTY say whether the stream is a terminal (colour, progress redraw).
	OutTTY bool
	ErrTTY bool
	// Getenv reads the environment (NO_COLOR, CLICOLOR_FORCE, FORCE_COLOR, CI); nil
	// means os.Getenv.
	Getenv func(string) string

	// colorMode is --color (auto, always, never); "" is auto.
	colorMode string
}

// System returns the process's own streams.
func System() IOStreams {
	return IOStreams{
		In: os.Stdin, Out: os.Stdout, Err: os.Stderr,
		OutTTY: isTerminal(os.Stdout), ErrTTY: isTerminal(os.Stderr),
		Getenv: os.Getenv,
	}
}

func (s IOStreams) getenv(k string) string {
	if s.Getenv == nil {
		return os.Getenv(k)
	}
	return s.Getenv(k)
}

// ColorOut says whether stdout may carry ANSI colour (see colorOn).
func (s IOStreams) ColorOut() bool { return s.colorOn(s.OutTTY) }

// ColorErr is ColorOut for stderr.
func (s IOStreams) ColorErr() bool { return s.colorOn(s.ErrTTY) }

// colorOn decides colour for a stream, in this order: --color=always or never decides
// alone (a flag typed for this run is the most specific wish, as no-color.org asks);
// under auto, NO_COLOR (set, not empty) turns colour off; else CLICOLOR_FORCE or
// FORCE_COLOR (set, and neither "0" nor "false") turn it on where the stream is no
// terminal, for CI logs that render ANSI; else colour goes to a terminal only. NO_COLOR
// winning over the force variables keeps the one switch that means "never colour" sure.
func (s IOStreams) colorOn(tty bool) bool {
	switch s.colorMode {
	case "always":
		return true
	case "never":
		return false
	}
	if s.getenv("NO_COLOR") != "" {
		return false
	}
	if envForcesColor(s.getenv("CLICOLOR_FORCE")) || envForcesColor(s.getenv("FORCE_COLOR")) {
		return true
	}
	return tty
}

// envForcesColor reads a force variable: set to anything but "", "0" or "false".
func envForcesColor(v string) bool {
	return v != "" && v != "0" && !strings.EqualFold(v, "false")
}

func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	if err != nil {
		return false
	}
	return fi.Mode()&os.ModeCharDevice != 0
}
