package redact

import (
	"bytes"
	"io"
	"sync"
)

// maxHold bounds what a Writer keeps back waiting for a URL's authority to end: an
// authority longer than this is not a URL anyone typed.
const maxHold = 4 << 10

// Writer passes what is written to it through Text on its way to the writer it wraps. A
// URL cut between two writes is still redacted: the end of a write is held back while it
// may be a URL whose user-info continues in the next write (an unfinished authority after
// "://", or a trailing ":" or ":/"), and only then, so a progress line without a newline
// is shown at once. Flush writes what is held. It is safe for concurrent use (a child's
// stdout and stderr are copied into one log by two goroutines).
type Writer struct {
	mu   sync.Mutex
	w    io.Writer
	held []byte
}

// NewWriter returns a Writer that writes to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write redacts p (with what was held) and passes on all but a held tail. It reports
// len(p) written unless the wrapped writer fails.
func (r *Writer) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	buf := p
	if len(r.held) > 0 {
		buf = append(r.held, p...)
	}
	cut := holdFrom(buf)
	var err error
	if cut > 0 {
		err = r.pass(buf[:cut])
	}
	r.held = append(r.held[:0:0], buf[cut:]...)
	if err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes what is held back.
func (r *Writer) Flush() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.held) == 0 {
		return nil
	}
	err := r.pass(r.held)
	r.held = nil
	return err
}

func (r *Writer) pass(b []byte) error {
	if bytes.Contains(b, []byte("://")) {
		b = []byte(Text(string(b)))
	}
	_, err := r.w.Write(b)
	return err
}

// holdFrom is where the part of buf that must wait for more input starts (len(buf) when
// none): the scheme of a last URL whose authority runs to the end of buf, or of a
// trailing ":" or ":/" that may be the start of "://".
func holdFrom(buf []byte) int {
	sep := -1
	// An unfinished authority first: it starts before any trailing ':'.
	if k := bytes.LastIndex(buf, []byte("://")); k >= 0 && authorityEnd(buf, k+3) == len(buf) {
		sep = k
	} else if bytes.HasSuffix(buf, []byte(":/")) {
		sep = len(buf) - 2
	} else if bytes.HasSuffix(buf, []byte(":")) {
		sep = len(buf) - 1
	}
	if sep < 0 {
		return len(buf)
	}
	from := schemeStart(buf, sep)
	if len(buf)-from > maxHold {
		return len(buf)
	}
	return from
}
