//go:build unix

package cli

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestPatchInputFIFONeverBlocks: a FIFO where a patch is expected — a format-patch
// directory's 0001-x.patch, or the mbox given to import — is refused at once by every
// command that reads patches, with a message naming it. Each command runs as a process of
// its own under a deadline, so that a regression shows as a failure instead of a test
// binary stuck in open(2) (the deadline bounds a hang; it is not a timing assertion: a
// refusal takes milliseconds).
func TestPatchInputFIFONeverBlocks(t *testing.T) {
	dir := t.TempDir()
	tree, fp, dst := filepath.Join(dir, "tree"), filepath.Join(dir, "fp"), filepath.Join(dir, "dst")
	for _, d := range []string{tree, fp} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(tree, "a.txt"), []byte("one\ntwo\nthree\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(fp, "0002-edit-a.patch"), []byte(fifoCaseMail), 0o644); err != nil {
		t.Fatal(err)
	}
	mbox := filepath.Join(dir, "in.mbox")
	for _, p := range []string{filepath.Join(fp, "0001-x.patch"), mbox} {
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		args []string
		want string // the file the message must name
	}{
		{[]string{"check", "--patches", fp}, "0001-x.patch"},
		{[]string{"apply", "--tree", tree, "--patches", fp}, "0001-x.patch"},
		{[]string{"status", "--tree", tree, "--patches", fp}, "0001-x.patch"},
		{[]string{"import", fp, "--patches", dst}, "0001-x.patch"},
		{[]string{"import", mbox, "--patches", dst}, "in.mbox"},
	}
	for _, c := range cases {
		name := strings.Join(c.args[:1], " ") + " " + filepath.Base(c.want)
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, os.Args[0], c.args...)
			cmd.Env = append(os.Environ(), asMainEnv+"=1", "HOME="+dir, "XDG_CONFIG_HOME="+filepath.Join(dir, "config"))
			out, err := cmd.CombinedOutput()
			if ctx.Err() != nil {
				t.Fatalf("%s blocked on the FIFO (killed after 2 minutes):\n%s", strings.Join(c.args, " "), out)
			}
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != ExitCheckFailed {
				t.Errorf("exit: %v, want %d\n%s", err, ExitCheckFailed, out)
			}
			if !strings.Contains(string(out), c.want+": ") || !strings.Contains(string(out), "not a regular file (a FIFO)") {
				t.Errorf("the message does not name %s as a FIFO:\n%s", c.want, out)
			}
			if _, err := os.Stat(dst); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s was written: %v", dst, err)
			}
			if data, _ := os.ReadFile(filepath.Join(tree, "a.txt")); string(data) != "one\ntwo\nthree\n" {
				t.Errorf("the tree changed: %q", data)
			}
		})
	}
}

const fifoCaseMail = `From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001
From: Patch Author <author@example.com>
Date: Thu, 2 Jan 2025 03:04:05 +0000
Subject: [PATCH] edit a

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
