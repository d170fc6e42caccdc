package verify

import (
	"fmt"
	"io"
	"os"

	"github.com/mpspatch/mpspatch/internal/confined"
)

// maxReportFile bounds the results file ReadReportFile reads: a full-profile run with
// every repetition writes a few MiB.
const maxReportFile = 256 << 20

// ReadReportFile is readReport on the file name: a regular file of at most maxReportFile
// bytes. A FIFO, a device or a directory is refused at once, never waited on or read
// without end.
func ReadReportFile(name string) (*Report, error) {
	f, err := openRegular(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readReport(&limitedReader{r: f, left: maxReportFile})
}

// checkRegular refuses an open file that is not a regular file.
func checkRegular(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return confined.NotRegular(fi.Mode())
	}
	return nil
}

// limitedReader is io.LimitReader that fails, rather than ends quietly, at the limit: a
// report cut short must not pass for a whole one.
type limitedReader struct {
	r    io.Reader
	left int64
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.left <= 0 {
		return 0, fmt.Errorf("larger than %d MiB; refusing to read further", maxReportFile>>20)
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	return n, err
}
