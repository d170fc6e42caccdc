//go:build unix

package series

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// hostileEntry plants one hostile 0001-a.patch in dir.
type hostileEntry struct {
	name  string
	plant func(t *testing.T, dir, file string)
	want  string // in the refusal
}

func hostileEntries() []hostileEntry {
	return []hostileEntry{
		{"fifo", func(t *testing.T, _, file string) {
			if err := syscall.Mkfifo(file, 0o644); err != nil {
				t.Fatal(err)
			}
		}, "not a regular file (a FIFO)"},
		{"link to /dev/zero", func(t *testing.T, _, file string) {
			if err := os.Symlink("/dev/zero", file); err != nil {
				t.Fatal(err)
			}
		}, "a symbolic link, not a regular file"},
		{"link to a patch outside", func(t *testing.T, dir, file string) {
			outside := filepath.Join(filepath.Dir(dir), "outside.patch")
			if err := os.WriteFile(outside, []byte(goodMail), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(outside, file); err != nil {
				t.Fatal(err)
			}
		}, "a symbolic link, not a regular file"},
		{"link to a patch inside", func(t *testing.T, dir, file string) {
			if err := os.WriteFile(filepath.Join(dir, "kept.mail"), []byte(goodMail), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("kept.mail", file); err != nil {
				t.Fatal(err)
			}
		}, "a symbolic link, not a regular file"},
		{"huge sparse file", func(t *testing.T, _, file string) {
			f, err := os.Create(file)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if err := f.Truncate(1 << 40); err != nil {
				t.Fatal(err)
			}
		}, "larger than 16 MiB"},
		{"directory", func(t *testing.T, _, file string) {
			if err := os.Mkdir(file, 0o755); err != nil {
				t.Fatal(err)
			}
		}, "not a regular file (a directory)"},
	}
}

// withoutBlocking runs f and fails the test, instead of hanging it, when f blocks: after a
// generous wait it opens every FIFO under dir for writing, again and again until f
// returns, which releases a reader stuck in open(2). This bounds a hang; it asserts
// nothing about speed.
func withoutBlocking(t *testing.T, dir string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
		return
	case <-time.After(time.Minute):
	}
	for {
		_ = filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
			if err == nil && fi.Mode()&os.ModeNamedPipe != 0 {
				if w, err := os.OpenFile(p, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
					w.Close()
				}
			}
			return nil
		})
		select {
		case <-done:
			t.Fatal("blocked reading a patch")
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// TestPatchDirRefusesHostileEntries: a listed patch that is a FIFO, a link (to a device,
// to a patch outside the directory, even to a file inside it), a huge sparse file or a
// directory is refused, unread, with its name and what it is.
func TestPatchDirRefusesHostileEntries(t *testing.T) {
	for _, h := range hostileEntries() {
		t.Run(h.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "patches")
			writeFiles(t, dir, map[string]string{"series": "0001-a.patch\n"})
			h.plant(t, dir, filepath.Join(dir, "0001-a.patch"))
			pd, err := OpenPatchDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer pd.Close()
			withoutBlocking(t, dir, func() {
				_, err := pd.ReadFile("0001-a.patch", MaxPatchSize)
				var ie *InputError
				if !errors.As(err, &ie) || ie.Path != dir+"/0001-a.patch" || !strings.Contains(err.Error(), h.want) {
					t.Errorf("ReadFile: have %v, want an InputError naming %s/0001-a.patch: %s", err, dir, h.want)
				}
				_, err = Load(pd, ".", dir)
				var le *LintError
				if !errors.As(err, &le) || len(le.Problems) != 1 || le.Problems[0].File != OrderFile ||
					!strings.Contains(le.Problems[0].Msg, "0001-a.patch is listed but cannot be read: "+h.want) {
					t.Errorf("Load: have %v, want one problem: 0001-a.patch is listed but cannot be read: %s", err, h.want)
				}
			})
		})
	}
}

// TestPatchDirReadsRegularFiles: the same reader reads an ordinary series, and its
// listing holds the entries by name.
func TestPatchDirReadsRegularFiles(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"series": "0001-a.patch\n", "0001-a.patch": goodMail})
	pd, err := OpenPatchDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer pd.Close()
	s, err := Load(pd, ".", dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Patches) != 1 || string(s.Patches[0].Raw) != goodMail {
		t.Fatalf("have %+v", s.Patches)
	}
	want, err := Load(os.DirFS(dir), ".", dir)
	if err != nil {
		t.Fatal(err)
	}
	if s.Hash() != want.Hash() {
		t.Errorf("hash %s through PatchDir, %s through os.DirFS", s.Hash(), want.Hash())
	}
	if _, err := pd.ReadFile("../x", MaxPatchSize); err == nil {
		t.Error("a name with a slash was read")
	}
	if has, err := pd.Has("series"); !has || err != nil {
		t.Errorf("Has(series): %v %v", has, err)
	}
	if has, err := pd.Has("nope"); has || err != nil {
		t.Errorf("Has(nope): %v %v", has, err)
	}
}

// TestReadPatchFile: a file the user names (an mbox) may be reached through a link, but
// must be a regular file within the bound.
func TestReadPatchFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.mbox")
	writeFiles(t, dir, map[string]string{"good.mbox": goodMail})
	link := filepath.Join(dir, "link.mbox")
	if err := os.Symlink(good, link); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{good, link} {
		if data, err := ReadPatchFile(p, MaxImportSize); err != nil || string(data) != goodMail {
			t.Errorf("%s: %v", p, err)
		}
	}
	for _, h := range hostileEntries() {
		if strings.HasPrefix(h.name, "link") {
			continue // a link the user names is followed; what it reaches is judged
		}
		t.Run(h.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "in.mbox")
			h.plant(t, filepath.Dir(p), p)
			withoutBlocking(t, filepath.Dir(p), func() {
				_, err := ReadPatchFile(p, MaxPatchSize)
				var ie *InputError
				if !errors.As(err, &ie) || ie.Path != p || !strings.Contains(err.Error(), h.want) {
					t.Errorf("have %v, want an InputError naming %s: %s", err, p, h.want)
				}
			})
		})
	}
	zero := filepath.Join(dir, "zero.mbox")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadPatchFile(zero, MaxImportSize); err == nil || !strings.Contains(err.Error(), "not a regular file (a character device)") {
		t.Errorf("link to /dev/zero: %v", err)
	}
}

// countdownCtx is a context that reports cancellation from its n-th Err call on: a
// cancellation that arrives while a loop is part way through, without timing.
type countdownCtx struct {
	context.Context
	n int
}

func (c *countdownCtx) Err() error {
	if c.n--; c.n < 0 {
		return context.Canceled
	}
	return nil
}

// TestLoadHonoursCancellation: a series load stops between patches once its context is
// cancelled, and says so, instead of reading on.
func TestLoadHonoursCancellation(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{"series": "0001-a.patch\n0002-b.patch\n0003-c.patch\n"}
	for _, n := range []string{"0001-a.patch", "0002-b.patch", "0003-c.patch"} {
		files[n] = goodMail
	}
	writeFiles(t, dir, files)
	pd, err := OpenPatchDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer pd.Close()
	// Cancelled after the first patch: the other two are never read, so a FIFO there
	// would not be waited on either.
	if err := os.Remove(filepath.Join(dir, "0003-c.patch")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "0003-c.patch"), 0o644); err != nil {
		t.Fatal(err)
	}
	withoutBlocking(t, dir, func() {
		ctx := &countdownCtx{Context: context.Background(), n: 1}
		if _, err := LoadContext(ctx, pd, ".", dir); !errors.Is(err, context.Canceled) {
			t.Errorf("have %v, want context.Canceled", err)
		}
		if _, err := LoadContext(context.Background(), pd, ".", dir); err == nil {
			t.Error("the FIFO was not refused")
		}
	})
}
