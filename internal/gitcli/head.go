package gitcli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// ErrNotRepository is returned by HeadCommit for a directory that is not the top of a git
// work tree.
var ErrNotRepository = errors.New("not a git repository")

// HeadCommit returns the full SHA HEAD points at in the repository whose work tree is
// dir (dir itself, not a parent). It reads the refs in-process, which is cheaper than
// starting git (see BenchmarkHeadCommit): go-git's plumbing parses and resolves them over
// refFiles below. Only go-git's plumbing packages are linked: its storage layer brings its
// config parser and, with it, encoding/gob and a dozen other initialisers that ran at the
// start of every mpspatch command (about 0.2 ms of CPU and 20 page faults). A .git that is
// a file (a linked worktree or a submodule), or refs this reader does not handle (a
// reftable, an unborn branch, anything malformed), are asked through `git rev-parse`
// instead.
func (g *Git) HeadCommit(ctx context.Context, dir string) (string, error) {
	dotgit := filepath.Join(dir, ".git")
	fi, err := os.Lstat(dotgit)
	if err != nil {
		return "", fmt.Errorf("head commit of %s: %w", dir, ErrNotRepository)
	}
	if fi.IsDir() {
		ref, rerr := storer.ResolveReference(refFiles{dir: dotgit}, plumbing.HEAD)
		if rerr == nil {
			return ref.Hash().String(), nil
		}
		err = rerr
	} else {
		err = errors.New(".git is a file")
	}
	sha, gerr := g.RevParse(ctx, dir, "HEAD")
	if gerr != nil {
		return "", fmt.Errorf("head commit of %s: go-git: %v; %w", dir, err, gerr)
	}
	return sha, nil
}

// refFiles reads references from a .git directory as git's files backend stores them: a
// file under the directory (HEAD, refs/heads/main), else a line of packed-refs. It is the
// one method of a go-git ReferenceStorer that storer.ResolveReference calls; the embedded
// interface is nil, so any other would panic, and none is called.
type refFiles struct {
	storer.ReferenceStorer
	dir string
}

func (r refFiles) Reference(name plumbing.ReferenceName) (*plumbing.Reference, error) {
	if name != plumbing.HEAD && (!strings.HasPrefix(name.String(), "refs/") || name.Validate() != nil) {
		return nil, fmt.Errorf("reference %q: not HEAD nor a valid name under refs/", name)
	}
	data, err := os.ReadFile(filepath.Join(r.dir, filepath.FromSlash(name.String())))
	switch {
	case err == nil:
		return parseRef(name, strings.TrimSpace(string(data)))
	case errors.Is(err, fs.ErrNotExist):
		return r.packed(name)
	default:
		return nil, err
	}
}

// parseRef reads a loose reference's content: "ref: NAME" or a full SHA.
func parseRef(name plumbing.ReferenceName, target string) (*plumbing.Reference, error) {
	ref := plumbing.NewReferenceFromStrings(name.String(), target)
	if ref.Type() == plumbing.HashReference && !plumbing.IsHash(target) {
		return nil, fmt.Errorf("reference %s: %q is neither a SHA nor \"ref: NAME\"", name, target)
	}
	return ref, nil
}

// packed looks name up in packed-refs: "SHA NAME" lines, with comments (#) and peeled tags
// (^SHA) between them.
func (r refFiles) packed(name plumbing.ReferenceName) (*plumbing.Reference, error) {
	f, err := os.Open(filepath.Join(r.dir, "packed-refs"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, plumbing.ErrReferenceNotFound
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' || line[0] == '^' {
			continue
		}
		sha, n, ok := strings.Cut(line, " ")
		if !ok || !plumbing.IsHash(sha) {
			return nil, fmt.Errorf("packed-refs: malformed line %q", line)
		}
		if n == name.String() {
			return plumbing.NewHashReference(name, plumbing.NewHash(sha)), nil
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("packed-refs: %w", err)
	}
	return nil, plumbing.ErrReferenceNotFound
}
