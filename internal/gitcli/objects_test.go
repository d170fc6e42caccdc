package gitcli

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestObjectWriterMatchesGit: blobs, a tree (entries given out of order, a name that
// needs quoting) and a commit written through the long-lived processes get the IDs git's
// one-shot commands give the same content.
func TestObjectWriterMatchesGit(t *testing.T) {
	t.Parallel()
	g := newGit(t)
	dir := newRepo(t, g, map[string]string{"a.txt": "a\n", "tab\tname.txt": "t\n"})
	ctx := context.Background()
	w := g.NewObjectWriter(ctx, dir)
	defer w.Close()
	var entries []TreeEntry
	for _, name := range []string{"tab\tname.txt", "a.txt"} {
		oid, err := w.Blob(name)
		if err != nil {
			t.Fatal(err)
		}
		if want := git(t, g, dir, "hash-object", "--", name); oid != want {
			t.Errorf("blob %q: %s, git hash-object %s", name, oid, want)
		}
		entries = append(entries, TreeEntry{Mode: "100644", Type: "blob", OID: oid, Path: name})
	}
	tree, err := w.Tree(entries)
	if err != nil {
		t.Fatal(err)
	}
	if want := git(t, g, dir, "rev-parse", "HEAD^{tree}"); tree != want {
		t.Errorf("tree %s, the commit's %s", tree, want)
	}
	if _, err := w.Tree([]TreeEntry{{Mode: "100644", Type: "blob", OID: entries[0].OID, Path: "a/b"}}); err == nil {
		t.Error("a tree entry named a/b was taken")
	}
}

// TestObjectWriterGitDies: when git refuses a request (a file that is not there) and
// exits, the request and every one after it fail with git's own message, and a large
// request to a git that has already exited fails instead of blocking on a full pipe.
func TestObjectWriterGitDies(t *testing.T) {
	t.Parallel()
	g := newGit(t)
	dir := newRepo(t, g, map[string]string{"a.txt": "a\n"})
	ctx := context.Background()
	w := g.NewObjectWriter(ctx, dir)
	if _, err := w.Blob("no-such-file"); err == nil || !strings.Contains(err.Error(), "no-such-file") {
		t.Errorf("blob of a missing file: %v; want git's complaint naming it", err)
	}
	if _, err := w.Blob("a.txt"); err == nil {
		t.Error("a request after git exited succeeded")
	}
	if err := w.Close(); err == nil {
		t.Error("Close after git failed returned no error")
	}

	// `git version` answers one line and exits without reading its input.
	s := g.startLineSession(ctx, dir, "version", []string{"version"})
	if l, err := s.ask("x\n"); err != nil || !strings.HasPrefix(l, "git version") {
		t.Fatalf("first answer %q, %v", l, err)
	}
	huge := strings.Repeat(fmt.Sprintf("%0100d\n", 0), 20000) // 2 MB, far past a pipe's buffer
	if _, err := s.ask(huge); err == nil {
		t.Error("a request to a git that had exited succeeded")
	}
}

// TestObjectWriterNoGit: a git that cannot be started fails the request with the
// not-found error, instead of leaving it waiting for an answer.
func TestObjectWriterNoGit(t *testing.T) {
	t.Parallel()
	g := newGit(t)
	g.Bin = filepath.Join(t.TempDir(), "no-git-here")
	w := g.NewObjectWriter(context.Background(), t.TempDir())
	var nf *NotFoundError
	if _, err := w.Blob("a.txt"); !errors.As(err, &nf) {
		t.Errorf("blob with no git: %v; want a *NotFoundError", err)
	}
	if err := w.Close(); !errors.As(err, &nf) {
		t.Errorf("close with no git: %v; want a *NotFoundError", err)
	}
}
