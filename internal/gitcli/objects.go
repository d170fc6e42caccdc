package gitcli

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"sync"
)

// ObjectWriter writes blobs, trees and commits into a repository through three git
// processes that live as long as it does (`git hash-object -w --stdin-paths` for blobs
// and commits, `git mktree --batch` for trees), so that a rebase of hundreds of patches
// starts three processes, not three per patch. Each object is written (a loose object,
// as git add, write-tree and commit-tree write them) before its ID is returned: a caller
// that records the ID afterwards never names an object that does not exist.
//
// Not safe for concurrent use. Close ends the processes.
type ObjectWriter struct {
	g   *Git
	ctx context.Context
	dir string
	// blobs hashes work-tree files through the filters git add applies (.gitattributes,
	// core.autocrlf), trees takes ls-tree lines, commits hashes prepared commit files.
	blobs, trees, commits *lineSession
	err                   error
}

// NewObjectWriter returns a writer for the repository whose work tree is dir. The
// processes start on first use.
func (g *Git) NewObjectWriter(ctx context.Context, dir string) *ObjectWriter {
	return &ObjectWriter{g: g, ctx: ctx, dir: dir}
}

// Blob writes the work-tree file at path (relative to the work tree's top, a regular
// file) as a blob, converted as `git add` converts it, and returns its ID.
func (w *ObjectWriter) Blob(path string) (string, error) {
	if w.blobs == nil {
		w.blobs = w.g.startLineSession(w.ctx, w.dir, "hash-object -w --stdin-paths", []string{"hash-object", "-w", "--stdin-paths"})
	}
	return w.ask(w.blobs, quoteLine(path)+"\n")
}

// Tree writes a tree of entries (names, not paths: one directory level; mode as ls-tree
// prints it) and returns its ID. git sorts the entries.
func (w *ObjectWriter) Tree(entries []TreeEntry) (string, error) {
	if w.trees == nil {
		// --missing: the entries come from the repository's own trees or were just
		// written; a submodule's commit is never in the repository.
		w.trees = w.g.startLineSession(w.ctx, w.dir, "mktree --batch", []string{"mktree", "--batch", "--missing"})
	}
	var b strings.Builder
	for _, e := range entries {
		if strings.ContainsAny(e.Path, "/\x00") || e.Path == "" {
			return "", fmt.Errorf("git mktree: entry name %q is not one path component", truncate(e.Path, 80))
		}
		fmt.Fprintf(&b, "%s %s %s\t%s\n", e.Mode, e.Type, e.OID, quoteLine(e.Path))
	}
	b.WriteString("\n")
	return w.ask(w.trees, b.String())
}

// Commit writes the commit object held in the file at path (absolute, outside the work
// tree: the caller's scratch file) verbatim and returns its ID.
func (w *ObjectWriter) Commit(path string) (string, error) {
	if w.commits == nil {
		w.commits = w.g.startLineSession(w.ctx, w.dir, "hash-object -w -t commit --stdin-paths", []string{"hash-object", "-w", "-t", "commit", "--no-filters", "--stdin-paths"})
	}
	return w.ask(w.commits, quoteLine(path)+"\n")
}

// Close ends the processes and returns the first error any of them had.
func (w *ObjectWriter) Close() error {
	for _, s := range []*lineSession{w.blobs, w.trees, w.commits} {
		if s == nil {
			continue
		}
		if err := s.close(); err != nil && w.err == nil {
			w.err = err
		}
	}
	w.blobs, w.trees, w.commits = nil, nil, nil
	return w.err
}

func (w *ObjectWriter) ask(s *lineSession, req string) (string, error) {
	if w.err != nil {
		return "", w.err
	}
	line, err := s.ask(req)
	if err == nil && !objectIDRE().MatchString(line) {
		err = fmt.Errorf("git %s: want an object ID, have %q", s.op, truncate(line, 80))
	}
	if err != nil {
		w.err = err
		return "", err
	}
	return line, nil
}

// quoteLine C-quotes a path git reads one a line (hash-object --stdin-paths, mktree),
// when it holds a character that would end or change the line; git unquotes it.
func quoteLine(p string) string {
	need := strings.HasPrefix(p, `"`)
	for i := 0; i < len(p) && !need; i++ {
		need = p[i] < 0x20 || p[i] == '\\' || p[i] == 0x7f
	}
	if !need {
		return p
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c >= 0x7f:
			fmt.Fprintf(&b, `\%03o`, c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// lineSession is a git process that answers each request written to its stdin with one
// line on stdout.
type lineSession struct {
	op    string
	in    *os.File // git's stdin: a pipe of the OS, so that git's end closes when it exits
	lines chan string
	done  chan error
	once  sync.Once
	err   error
}

func (g *Git) startLineSession(ctx context.Context, dir, op string, args []string) *lineSession {
	s := &lineSession{op: op, lines: make(chan string), done: make(chan error, 1)}
	// An *os.File, not an io.Pipe: git reads it directly, with no copying goroutine for
	// Wait to wait on, so a git that dies is seen to end (its stdout closes) however the
	// requests stand; and once mpspatch's copy of the read end is closed, a request
	// written to a dead git fails (EPIPE) instead of filling the pipe and blocking.
	pr, pw, err := os.Pipe()
	if err != nil {
		close(s.lines)
		s.done <- fmt.Errorf("git %s: %w", op, err)
		return s
	}
	s.in = pw
	// lines closes when the output ends, or when git never started (consume not run).
	closeLines := sync.OnceFunc(func() { close(s.lines) })
	go func() {
		_, err := g.exec(ctx, call{op: op, dir: dir, args: args, stdin: pr, dieWithParent: true,
			started: func() { pr.Close() },
			consume: func(out io.Reader) error {
				// Closed when the output ends, so that a request waiting for an answer
				// from a process that died learns of it at once.
				defer closeLines()
				r := bufio.NewReader(out)
				for {
					l, err := r.ReadString('\n')
					if err == io.EOF && l == "" {
						return nil
					}
					if err != nil {
						return err
					}
					s.lines <- strings.TrimSuffix(l, "\n")
				}
			}})
		closeLines()
		s.done <- err
	}()
	return s
}

func (s *lineSession) ask(req string) (string, error) {
	if s.in == nil {
		return "", s.fail()
	}
	if _, err := io.WriteString(s.in, req); err != nil {
		return "", s.fail()
	}
	l, ok := <-s.lines
	if !ok {
		return "", s.fail()
	}
	return l, nil
}

// fail ends the session and returns why the process stopped answering.
func (s *lineSession) fail() error {
	if err := s.close(); err != nil {
		return err
	}
	return fmt.Errorf("git %s: ended without answering", s.op)
}

func (s *lineSession) close() error {
	s.once.Do(func() {
		if s.in != nil {
			s.in.Close()
		}
		for range s.lines {
		}
		s.err = <-s.done
	})
	return s.err
}

// ReadTree lists every entry of commit's tree, subtrees included (`git ls-tree -r -t`),
// with paths from the top.
func (g *Git) ReadTree(ctx context.Context, dir, commit string) ([]TreeEntry, error) {
	if err := checkRev(commit); err != nil {
		return nil, fmt.Errorf("git ls-tree: %w", err)
	}
	out, err := g.exec(ctx, call{op: "ls-tree -r -t " + commit, dir: dir, args: []string{"ls-tree", "-r", "-t", "-z", "--full-tree", commit}})
	if err != nil {
		return nil, err
	}
	return parseLsTree(commit, out)
}

// parseLsTree reads `git ls-tree -z` output: records "MODE TYPE OID\tPATH", each ended by
// a NUL; anything else is an error naming commit.
func parseLsTree(commit string, out []byte) ([]TreeEntry, error) {
	var entries []TreeEntry
	for _, rec := range bytes.Split(out, []byte{0}) {
		if len(rec) == 0 {
			continue
		}
		meta, path, ok := bytes.Cut(rec, []byte{'\t'})
		f := strings.Fields(string(meta))
		if !ok || len(f) != 3 || len(path) == 0 {
			return nil, fmt.Errorf("git ls-tree %s: unexpected record %q", commit, truncate(string(rec), 80))
		}
		entries = append(entries, TreeEntry{Mode: f[0], Type: f[1], OID: f[2], Path: string(path)})
	}
	return entries, nil
}

// CommitterIdent is the committer line git would write now ("Name <email> epoch
// +zone"), with git's own refusal of a missing identity (`git var GIT_COMMITTER_IDENT`,
// as strict as commit-tree).
func (g *Git) CommitterIdent(ctx context.Context, dir string) (string, error) {
	out, err := g.exec(ctx, call{op: "var GIT_COMMITTER_IDENT", dir: dir, args: []string{"var", "GIT_COMMITTER_IDENT"}})
	if err != nil {
		return "", err
	}
	return strings.TrimSuffix(string(out), "\n"), nil
}

// ConfigValues returns the values of the configuration keys (lower-case, as git
// prints them) that are set, each key's last value.
func (g *Git) ConfigValues(ctx context.Context, dir string, keys ...string) (map[string]string, error) {
	vals := map[string]string{}
	if len(keys) == 0 {
		return vals, nil
	}
	quoted := make([]string, len(keys))
	for i, k := range keys {
		quoted[i] = regexp.QuoteMeta(k)
	}
	out, err := g.exec(ctx, call{op: "config --get-regexp", dir: dir, args: []string{"config", "-z", "--get-regexp", "^(" + strings.Join(quoted, "|") + ")$"}})
	var ge *Error
	if errors.As(err, &ge) && ge.ExitCode == 1 {
		return vals, nil // none set
	}
	if err != nil {
		return nil, err
	}
	for _, rec := range bytes.Split(out, []byte{0}) {
		k, v, _ := bytes.Cut(rec, []byte{'\n'})
		if len(k) > 0 {
			vals[string(k)] = string(v)
		}
	}
	return vals, nil
}
