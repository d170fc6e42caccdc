package stack

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/mpspatch/mpspatch/internal/series"
)

// TestCommitWriterMatchesGit: the commit the commit writer records for a step (files
// changed, made, deleted, made executable, a directory emptied, a new CRLF file, under the
// hostile user config) is byte for byte the commit git add
// and commit-tree make of the same work tree: same ID. Authors and dates it cannot be
// sure to write as git does are declined, never written differently.
func TestCommitWriterMatchesGit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, true)
	dir := filepath.Join(t.TempDir(), "repo")
	files := map[string]string{
		"a.txt": "a\n", "dir/sub/b.txt": "b\n", "dir/c.sh": "c\n", "keep/x": "x\n", "z with space.txt": "z\n",
	}
	for p, d := range files {
		write(t, filepath.Join(dir, p), d)
	}
	e.git(dir, "init", "-q")
	e.git(dir, "add", "-A")
	e.git(dir, "commit", "-q", "-m", "base")
	head := e.git(dir, "rev-parse", "HEAD")

	write(t, filepath.Join(dir, "a.txt"), "a changed\n")
	if err := os.Chmod(filepath.Join(dir, "a.txt"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "dir/sub/b.txt")); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "new/deep/n.txt"), "crlf\r\nline\r\n")
	write(t, filepath.Join(dir, "z with space.txt"), "z\nz\n")
	plan := &series.Plan{Changes: []series.Change{
		{Path: "a.txt", OldExists: true, NewExists: true},
		{Path: "dir/sub/b.txt", OldExists: true},
		{Path: "new/deep/n.txt", NewExists: true},
		{Path: "z with space.txt", OldExists: true, NewExists: true},
	}}
	root := openRoot(t, dir)
	ctx := context.Background()

	cases := []struct {
		name    string
		mm      mailMessage
		msg     string
		decline bool
	}{
		{"plain", mailMessage{Name: "A U Thor", Email: "author@example.com", Date: "Thu, 2 Jan 2025 03:04:05 +0000"}, "subject\n\nbody\n", false},
		{"zone east", mailMessage{Name: "dependabot[bot]", Email: "49699333+dependabot[bot]@users.noreply.github.com", Date: "Mon, 13 Oct 2025 23:59:59 +0530"}, "s\n", false},
		{"zone west, no final newline", mailMessage{Name: "Ünïcode Name", Email: "u@example.com", Date: "Sat, 1 Feb 2020 00:00:00 -0800"}, "no newline", false},
		{"minus zero", mailMessage{Name: "Z", Email: "z@example.com", Date: "Sat, 1 Feb 2020 00:00:00 -0000"}, "s\n", false},
		{"crud at the end", mailMessage{Name: "Trailing Dot.", Email: "t@example.com", Date: "Sat, 1 Feb 2020 00:00:00 +0000"}, "s\n", true},
		{"empty email", mailMessage{Name: "No Mail", Email: "", Date: "Sat, 1 Feb 2020 00:00:00 +0000"}, "s\n", true},
		{"other date form", mailMessage{Name: "D", Email: "d@example.com", Date: "2020-02-01 00:00:00 +0000"}, "s\n", true},
	}
	for _, c := range cases {
		cw := newCommitWriter(ctx, e.g, dir, t.TempDir())
		have, err := cw.record(ctx, root, plan, head, c.mm, c.msg)
		if cerr := cw.close(); err == nil && cerr != nil {
			err = cerr
		}
		if c.decline {
			if !errors.Is(err, errDecline) {
				t.Errorf("%s: record = %s, %v; want it declined", c.name, have, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		// git's way: stage the paths, write the index's tree, commit it.
		e.git(dir, "read-tree", head)
		if err := e.g.Add(ctx, dir, changedPaths(plan)); err != nil {
			t.Fatal(err)
		}
		want, err := commitIndex(ctx, e.g, dir, head, c.mm, c.msg, "test", false)
		if err != nil {
			t.Fatal(err)
		}
		if have != want {
			t.Errorf("%s: commit writer made %s:\n%s\ngit made %s:\n%s", c.name, have, e.git(dir, "cat-file", "-p", have), want, e.git(dir, "cat-file", "-p", want))
		}
		if a, b := e.git(dir, "rev-parse", have+"^{tree}"), e.git(dir, "rev-parse", want+"^{tree}"); a != b {
			t.Errorf("%s: trees differ: %s\n%s", c.name, e.git(dir, "ls-tree", "-r", have), e.git(dir, "ls-tree", "-r", want))
		}
	}
}

// TestCommitWriterDeclinesSymlink: git add stores a symbolic link's target, which
// hashing the file it names would not; the writer leaves such a step to git.
func TestCommitWriterDeclinesSymlink(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false)
	dir := filepath.Join(t.TempDir(), "repo")
	write(t, filepath.Join(dir, "a.txt"), "a\n")
	e.git(dir, "init", "-q")
	e.git(dir, "add", "-A")
	e.git(dir, "commit", "-q", "-m", "base")
	head := e.git(dir, "rev-parse", "HEAD")
	if err := os.Symlink("a.txt", filepath.Join(dir, "link")); err != nil {
		if errors.Is(err, fs.ErrPermission) {
			t.Skip("no symbolic links here")
		}
		t.Fatal(err)
	}
	ctx := context.Background()
	cw := newCommitWriter(ctx, e.g, dir, t.TempDir())
	defer cw.close()
	mm := mailMessage{Name: "A", Email: "a@example.com", Date: "Sat, 1 Feb 2020 00:00:00 +0000"}
	if sha, err := cw.record(ctx, openRoot(t, dir), &series.Plan{Changes: []series.Change{{Path: "link", NewExists: true}}}, head, mm, "s\n"); !errors.Is(err, errDecline) {
		t.Errorf("record of a symbolic link = %s, %v; want it declined", sha, err)
	}
}

// TestCommitWriterDeclinesSubdirectory: a tree below the top of its repository names
// paths from itself, the repository's trees from the top; the writer leaves it to git.
func TestCommitWriterDeclinesSubdirectory(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false)
	dir := filepath.Join(t.TempDir(), "repo")
	write(t, filepath.Join(dir, "sub/a.txt"), "a\n")
	e.git(dir, "init", "-q")
	e.git(dir, "add", "-A")
	e.git(dir, "commit", "-q", "-m", "base")
	head := e.git(dir, "rev-parse", "HEAD")
	sub := filepath.Join(dir, "sub")
	write(t, filepath.Join(sub, "a.txt"), "a changed\n")
	ctx := context.Background()
	cw := newCommitWriter(ctx, e.g, sub, t.TempDir())
	defer cw.close()
	mm := mailMessage{Name: "A", Email: "a@example.com", Date: "Sat, 1 Feb 2020 00:00:00 +0000"}
	if sha, err := cw.record(ctx, openRoot(t, sub), &series.Plan{Changes: []series.Change{{Path: "a.txt", OldExists: true, NewExists: true}}}, head, mm, "s\n"); !errors.Is(err, errDecline) {
		t.Errorf("record in a subdirectory = %s, %v; want it declined", sha, err)
	}
}

// TestCommitWriterUnderCRLFConversion: where git's CRLF conversion may apply, git add keeps
// a CRLF file as it is when the index's version holds a CR and converts it otherwise,
// while hash-object always converts; so under core.autocrlf, or an attributes file that
// may say text=auto (the tree's own .gitattributes, one a step writes, .git/info/attributes),
// the writer declines and the step goes through the index: the commit made is git add's,
// CRs kept.
func TestCommitWriterUnderCRLFConversion(t *testing.T) {
	t.Parallel()
	mm := mailMessage{Name: "A", Email: "a@example.com", Date: "Sat, 1 Feb 2020 00:00:00 +0000"}
	setups := []struct {
		name  string
		setup func(e *env, dir string)
		plan  []series.Change
	}{
		{"core.autocrlf=input", func(e *env, dir string) { e.git(dir, "config", "core.autocrlf", "input") }, nil},
		{"core.autocrlf=true", func(e *env, dir string) { e.git(dir, "config", "core.autocrlf", "true") }, nil},
		{"tree .gitattributes", func(e *env, dir string) {
			write(t, filepath.Join(dir, ".gitattributes"), "*.txt text=auto\n")
			e.git(dir, "add", "-A")
			e.git(dir, "commit", "-q", "-m", "attributes")
		}, nil},
		{"info/attributes", func(e *env, dir string) {
			write(t, filepath.Join(dir, ".git/info/attributes"), "* text=auto\n")
		}, nil},
		{"a step writes .gitattributes", func(e *env, dir string) {
			write(t, filepath.Join(dir, ".gitattributes"), "* text=auto\n")
		}, []series.Change{{Path: ".gitattributes", NewExists: true}}},
	}
	for _, c := range setups {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, false)
			dir := filepath.Join(t.TempDir(), "repo")
			write(t, filepath.Join(dir, "crlf.txt"), "a\r\nb\r\n")
			e.git(dir, "init", "-q")
			e.git(dir, "config", "core.autocrlf", "false")
			e.git(dir, "add", "-A")
			e.git(dir, "commit", "-q", "-m", "base: a file stored with CRs")
			c.setup(e, dir)
			head := e.git(dir, "rev-parse", "HEAD")
			write(t, filepath.Join(dir, "crlf.txt"), "a\r\nb\r\nc\r\n")
			plan := &series.Plan{Changes: append([]series.Change{{Path: "crlf.txt", OldExists: true, NewExists: true}}, c.plan...)}
			ctx := context.Background()
			cw := newCommitWriter(ctx, e.g, dir, t.TempDir())
			have, err := cw.record(ctx, openRoot(t, dir), plan, head, mm, "s\n")
			if cerr := cw.close(); err == nil && cerr != nil {
				err = cerr
			}
			if errors.Is(err, errDecline) {
				return // the step goes through the index, as git add would
			}
			if err != nil {
				t.Fatal(err)
			}
			e.git(dir, "read-tree", head)
			if err := e.g.Add(ctx, dir, changedPaths(plan)); err != nil {
				t.Fatal(err)
			}
			want, err := commitIndex(ctx, e.g, dir, head, mm, "s\n", "test", false)
			if err != nil {
				t.Fatal(err)
			}
			if have != want {
				t.Errorf("the writer recorded %s (crlf.txt %q), git add and commit-tree %s (crlf.txt %q)", have,
					e.git(dir, "cat-file", "-p", have+":crlf.txt"), want, e.git(dir, "cat-file", "-p", want+":crlf.txt"))
			}
		})
	}
}
