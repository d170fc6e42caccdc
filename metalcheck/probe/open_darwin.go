package probe

// Open loads Metal and returns the system default device as a Backend. It returns an
// error wrapping ErrUnsupported when the system has no Metal device.
func Open() (Backend, error) { return openMetal() }

// Supported says whether this OS can run the Metal probe at all: nil on macOS. Whether
// the Mac has a usable device is only known after Open.
func Supported() error { return nil }
