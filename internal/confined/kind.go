package confined

import (
	"fmt"
	"io/fs"
)

// NotRegular is the one refusal of something read as a file that is not a regular file
// (a FIFO would block the read, a device such as /dev/zero never end it, a link lead
// elsewhere): "not a regular file (a FIFO); refusing to read it". It wraps ErrNotRegular.
func NotRegular(m fs.FileMode) error {
	return fmt.Errorf("%w (%s); refusing to read it", ErrNotRegular, FileKind(m))
}

// FileKind names what a file of mode m is, in words: "a FIFO", "a character device",
// "a directory", ...; "a regular file" for one.
func FileKind(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "a regular file"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDir != 0:
		return "a directory"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	}
	return m.Type().String()
}
