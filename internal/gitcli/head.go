package gitcli

import (
	"context"
	"errors"
	"fmt"

	gogit "github.com/go-git/go-git/v5"
)

// ErrNotRepository is returned by HeadCommit for a directory that is not the top of a git
// work tree.
var ErrNotRepository = errors.New("not a git repository")

// HeadCommit returns the full SHA HEAD points at in the repository whose work tree is
// dir (dir itself, not a parent). It reads the refs in-process with go-git, which is
// cheaper than starting git (see BenchmarkHeadCommit); a repository go-git cannot read
// (an extension it does not know, say) is asked through `git rev-parse` instead.
func (g *Git) HeadCommit(ctx context.Context, dir string) (string, error) {
	repo, err := gogit.PlainOpenWithOptions(dir, &gogit.PlainOpenOptions{DetectDotGit: false, EnableDotGitCommonDir: true})
	if errors.Is(err, gogit.ErrRepositoryNotExists) {
		return "", fmt.Errorf("head commit of %s: %w", dir, ErrNotRepository)
	}
	if err == nil {
		ref, herr := repo.Head()
		if herr == nil {
			return ref.Hash().String(), nil
		}
		err = herr
	}
	sha, gerr := g.RevParse(ctx, dir, "HEAD")
	if gerr != nil {
		return "", fmt.Errorf("head commit of %s: go-git: %v; %w", dir, err, gerr)
	}
	return sha, nil
}
