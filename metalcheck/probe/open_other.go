//go:build !darwin

package probe

// Open returns the Metal backend. There is no Metal on this OS: it returns ErrUnsupported.
func Open() (Backend, error) { return nil, ErrUnsupported }

// Supported says whether this OS can run the Metal probe at all: ErrUnsupported here.
func Supported() error { return ErrUnsupported }
