//go:build unix

package metalcheck

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestAuditRefusesWhatIsNotASource: a tree is outside input. A FIFO named like a source
// would block the read for ever, a link to a device would never end, and a huge file
// would be read whole; each is refused with an error that names the file, promptly.
func TestAuditRefusesWhatIsNotASource(t *testing.T) {
	for _, tc := range []struct {
		name string
		make func(t *testing.T, p string)
		want string
	}{
		{"fifo", func(t *testing.T, p string) {
			if err := syscall.Mkfifo(p, 0o644); err != nil {
				t.Fatal(err)
			}
		}, "not a regular file (a FIFO)"},
		{"device", func(t *testing.T, p string) {
			if err := os.Symlink("/dev/zero", p); err != nil {
				t.Fatal(err)
			}
		}, "not a regular file (a character device)"},
		{"huge", func(t *testing.T, p string) {
			if err := os.WriteFile(p, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(p, MaxSourceSize+1); err != nil { // sparse: no disk used
				t.Fatal(err)
			}
		}, "over the 64 MiB a source may have"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			dir := filepath.Join(root, "aten", "src", "ATen", "mps")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "Fine.mm"), []byte("void f() {}\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			tc.make(t, filepath.Join(dir, "Bad.mm"))
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_, err := Audit(ctx, Options{Root: root, Paths: []string{"aten/src/ATen/mps"}})
			if ctx.Err() != nil {
				t.Fatal("the audit hung on the file")
			}
			if err == nil || !strings.Contains(err.Error(), "aten/src/ATen/mps/Bad.mm") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("have %v, want a refusal of Bad.mm saying %q", err, tc.want)
			}
		})
	}
}
