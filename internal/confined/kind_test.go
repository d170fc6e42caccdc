package confined

import (
	"errors"
	"io/fs"
	"testing"
)

// TestNotRegular: the refusal names the kind of file in words and is ErrNotRegular.
func TestNotRegular(t *testing.T) {
	for m, want := range map[fs.FileMode]string{
		fs.ModeNamedPipe:                  "not a regular file (a FIFO); refusing to read it",
		fs.ModeDevice | fs.ModeCharDevice: "not a regular file (a character device); refusing to read it",
		fs.ModeDevice:                     "not a regular file (a device); refusing to read it",
		fs.ModeSocket:                     "not a regular file (a socket); refusing to read it",
		fs.ModeDir | 0o755:                "not a regular file (a directory); refusing to read it",
		fs.ModeSymlink | 0o777:            "not a regular file (a symbolic link); refusing to read it",
		fs.ModeIrregular:                  "not a regular file (?---------); refusing to read it",
	} {
		err := NotRegular(m)
		if err.Error() != want || !errors.Is(err, ErrNotRegular) {
			t.Errorf("NotRegular(%v) = %q (is ErrNotRegular: %v), want %q", m, err, errors.Is(err, ErrNotRegular), want)
		}
	}
}
