package gitcli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// ErrNotRepository is returned by HeadCommit for a directory that is not the top of a git
// work tree.
var ErrNotRepository = errors.New("not a git repository")

// HeadCommit returns the full SHA HEAD points at in the repository whose work tree is
// dir (dir itself, not a parent). It reads the refs in-process with go-git's storage
// layer, which is cheaper than starting git (see BenchmarkHeadCommit). Only the storage
// and plumbing packages are imported: go-git's top-level package links its ssh, http and
// OpenPGP transports, whose initialisers would run in every mpspatch command. A .git that
// is a file (a linked worktree or a submodule), or a repository go-git cannot read (an
// extension it does not know, say), is asked through `git rev-parse` instead.
func (g *Git) HeadCommit(ctx context.Context, dir string) (string, error) {
	dotgit := filepath.Join(dir, ".git")
	fi, err := os.Lstat(dotgit)
	if err != nil {
		return "", fmt.Errorf("head commit of %s: %w", dir, ErrNotRepository)
	}
	if fi.IsDir() {
		st := filesystem.NewStorage(osfs.New(dotgit), cache.NewObjectLRU(0))
		ref, rerr := storer.ResolveReference(st, plumbing.HEAD)
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
