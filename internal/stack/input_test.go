//go:build unix

package stack

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mpspatch/mpspatch/internal/series"
)

// plainMail is a mail as git format-patch writes it, for tests that need any valid one.
const plainMail = `From 1111111111111111111111111111111111111111 Mon Sep 17 00:00:00 2001
From: Patch Author <author@example.com>
Date: Thu, 2 Jan 2025 03:04:05 +0000
Subject: [PATCH] edit a

An ordinary patch.
---
diff --git a/a.txt b/a.txt
--- a/a.txt
+++ b/a.txt
@@ -1,3 +1,3 @@
 one
-two
+TWO
 three
`

// hostileInputs plant one hostile input at path: what must be refused, and the words
// the refusal must hold. inDir says the case is about an entry of a directory (where any
// link is refused); an mbox the user names may be a link, judged by what it reaches.
func hostileInputs() []struct {
	name  string
	inDir bool
	plant func(t *testing.T, path string)
	want  string
} {
	type c = struct {
		name  string
		inDir bool
		plant func(t *testing.T, path string)
		want  string
	}
	return []c{
		{"fifo", false, func(t *testing.T, p string) {
			if err := syscall.Mkfifo(p, 0o644); err != nil {
				t.Fatal(err)
			}
		}, "not a regular file (a FIFO)"},
		{"link to /dev/zero", false, func(t *testing.T, p string) {
			if err := os.Symlink("/dev/zero", p); err != nil {
				t.Fatal(err)
			}
		}, "(a character device)"},
		{"link to a patch outside", true, func(t *testing.T, p string) {
			outside := filepath.Join(filepath.Dir(filepath.Dir(p)), "outside.patch")
			if err := os.WriteFile(outside, []byte(plainMail), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(outside, p); err != nil {
				t.Fatal(err)
			}
		}, "a symbolic link, not a regular file"},
		{"huge sparse file", false, func(t *testing.T, p string) {
			f, err := os.Create(p)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if err := f.Truncate(1 << 40); err != nil {
				t.Fatal(err)
			}
		}, "larger than"},
	}
}

// unblockFIFOs bounds a hang on a FIFO: run f, and after a generous wait keep opening
// every FIFO under dir for writing until f returns, then fail. It asserts nothing about
// speed; a refusal takes microseconds.
func unblockFIFOs(t *testing.T, dir string, f func()) {
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

// TestImportRefusesHostileInput: a format-patch directory whose 0001-x.patch is a FIFO,
// a link (to /dev/zero, to a patch outside the directory) or a huge sparse file, and an
// mbox that is any of those, are refused by import (and by the normalised view check and
// apply read) with the file's name, and nothing is written.
func TestImportRefusesHostileInput(t *testing.T) {
	for _, h := range hostileInputs() {
		t.Run("format-patch dir/"+h.name, func(t *testing.T) {
			root := t.TempDir()
			src, dst := filepath.Join(root, "fp"), filepath.Join(root, "dst")
			if err := os.Mkdir(src, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(src, "0002-y.patch"), []byte(plainMail), 0o644); err != nil {
				t.Fatal(err)
			}
			bad := filepath.Join(src, "0001-x.patch")
			h.plant(t, bad)
			want := h.want
			if !h.inDir && strings.HasPrefix(h.name, "link") {
				want = "a symbolic link, not a regular file" // in a directory, no link at all
			}
			unblockFIFOs(t, root, func() {
				_, err := Import(context.Background(), ImportOptions{Src: src, Dir: dst})
				checkRefusal(t, err, bad, want)
				pd, err := series.OpenPatchDir(src)
				if err != nil {
					t.Error(err)
					return
				}
				defer pd.Close()
				if !LooksLikeFormatPatchDir(pd) {
					t.Error("not seen as a format-patch directory")
				}
				_, _, err = NormalisedView(context.Background(), pd)
				checkRefusal(t, err, bad, want)
			})
			if _, err := os.Stat(dst); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("import wrote %s: %v", dst, err)
			}
		})
		if h.inDir {
			continue
		}
		t.Run("mbox/"+h.name, func(t *testing.T) {
			root := t.TempDir()
			src, dst := filepath.Join(root, "in.mbox"), filepath.Join(root, "dst")
			h.plant(t, src)
			unblockFIFOs(t, root, func() {
				_, err := Import(context.Background(), ImportOptions{Src: src, Dir: dst})
				checkRefusal(t, err, src, h.want)
			})
			if _, err := os.Stat(dst); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("import wrote %s: %v", dst, err)
			}
		})
	}
}

func checkRefusal(t *testing.T, err error, path, want string) {
	t.Helper()
	var ie *series.InputError
	if !errors.As(err, &ie) || ie.Path != path || !strings.Contains(err.Error(), want) {
		t.Errorf("have %v, want a refusal naming %s: %s", err, path, want)
	}
}

// TestImportMboxMailBound: an mbox within its bound may still not hold a mail larger
// than a patch file may be.
func TestImportMboxMailBound(t *testing.T) {
	root := t.TempDir()
	src := filepath.Join(root, "in.mbox")
	big := plainMail + "+" + strings.Repeat("x", series.MaxPatchSize) + "\n"
	if err := os.WriteFile(src, []byte(plainMail+"\n"+big), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ReadMails(context.Background(), src)
	if err == nil || !strings.Contains(err.Error(), "mail 2 is larger than 16 MiB") {
		t.Errorf("have %v, want mail 2 refused as too large", err)
	}
}

// TestReadMailsHonoursCancellation: reading a format-patch directory stops between files
// once the context is cancelled, so an interrupted import or check stops reading.
func TestReadMailsHonoursCancellation(t *testing.T) {
	src := t.TempDir()
	for i := 1; i <= 3; i++ {
		if err := os.WriteFile(filepath.Join(src, fmt.Sprintf("%04d-x.patch", i)), []byte(plainMail), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx := &countdownCtx{Context: context.Background(), n: 1}
	if _, err := ReadMails(ctx, src); !errors.Is(err, context.Canceled) {
		t.Errorf("ReadMails: have %v, want context.Canceled", err)
	}
	ctx = &countdownCtx{Context: context.Background(), n: 4}
	_, err := Import(ctx, ImportOptions{Src: src, Dir: filepath.Join(t.TempDir(), "dst")})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Import: have %v, want context.Canceled", err)
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
