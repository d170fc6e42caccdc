package cli

import (
	"io"
	"os"
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
	// Getenv reads the environment (NO_COLOR, CI); nil means os.Getenv.
	Getenv func(string) string
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

// ColorOut says whether stdout may carry ANSI colour: a terminal, and NO_COLOR unset.
func (s IOStreams) ColorOut() bool { return s.OutTTY && s.getenv("NO_COLOR") == "" }

// ColorErr is ColorOut for stderr.
func (s IOStreams) ColorErr() bool { return s.ErrTTY && s.getenv("NO_COLOR") == "" }

func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	if err != nil {
		return false
	}
	return fi.Mode()&os.ModeCharDevice != 0
}
