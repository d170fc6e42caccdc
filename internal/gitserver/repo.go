package gitserver

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// Commit is one commit of a generated repository.
type Commit struct {
	Message string
	// Files maps a path to its new content; an empty string deletes the file. Files not
	// named keep the content of the commit before.
	Files map[string]string
	// Gitlinks maps a path to a submodule commit (the submodule's .gitmodules entry is
	// the caller's to write, in Files).
	Gitlinks map[string]string
	// Tags are lightweight tags put on the commit; AnnotatedTags get a tag object.
	Tags, AnnotatedTags []string
}

// BuildRepo makes a bare repository at dir (for example Server.Root + "/up.git") whose
// main branch holds commits, in order, with fixed identities and dates so the commit IDs
// are the same on every run. It returns the commit ID of each commit.
func BuildRepo(dir string, commits []Commit) ([]string, error) {
	work, err := os.MkdirTemp("", "gitserver-work-")
	if err != nil {
		return nil, fmt.Errorf("build repo %s: %w", dir, err)
	}
	defer os.RemoveAll(work)
	g := func(args ...string) (string, error) {
		cmd := exec.Command("git", args...)
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull,
			"GIT_AUTHOR_NAME=upstream", "GIT_AUTHOR_EMAIL=upstream@example.invalid",
			"GIT_COMMITTER_NAME=upstream", "GIT_COMMITTER_EMAIL=upstream@example.invalid",
			"GIT_AUTHOR_DATE=2025-01-01T00:00:00Z", "GIT_COMMITTER_DATE=2025-01-01T00:00:00Z")
		out, err := cmd.CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("build repo %s: git %s: %v: %s", dir, strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out)), nil
	}
	if _, err := g("init", "-q", "-b", "main"); err != nil {
		return nil, err
	}
	var ids []string
	for i, c := range commits {
		paths := make([]string, 0, len(c.Files))
		for p := range c.Files {
			paths = append(paths, p)
		}
		sort.Strings(paths)
		for _, p := range paths {
			full := filepath.Join(work, filepath.FromSlash(p))
			if c.Files[p] == "" {
				if err := os.Remove(full); err != nil {
					return nil, fmt.Errorf("build repo %s: commit %d: %w", dir, i, err)
				}
				continue
			}
			if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
				return nil, fmt.Errorf("build repo %s: %w", dir, err)
			}
			if err := os.WriteFile(full, []byte(c.Files[p]), 0o644); err != nil {
				return nil, fmt.Errorf("build repo %s: %w", dir, err)
			}
		}
		if _, err := g("add", "-A"); err != nil {
			return nil, err
		}
		for p, sha := range c.Gitlinks {
			if _, err := g("update-index", "--add", "--cacheinfo", "160000,"+sha+","+p); err != nil {
				return nil, err
			}
		}
		msg := c.Message
		if msg == "" {
			msg = fmt.Sprintf("commit %d", i+1)
		}
		if _, err := g("commit", "-q", "--allow-empty", "-m", msg); err != nil {
			return nil, err
		}
		id, err := g("rev-parse", "HEAD")
		if err != nil {
			return nil, err
		}
		ids = append(ids, id)
		for _, t := range c.Tags {
			if _, err := g("tag", t); err != nil {
				return nil, err
			}
		}
		for _, t := range c.AnnotatedTags {
			if _, err := g("tag", "-a", "-m", "release "+t, t); err != nil {
				return nil, err
			}
		}
	}
	os.RemoveAll(dir)
	if _, err := g("clone", "-q", "--bare", work, dir); err != nil {
		return nil, err
	}
	return ids, nil
}

// MoveTag points tag in the bare repository dir at commit, as an upstream that re-tags
// a release would.
func MoveTag(dir, tag, commit string) error {
	cmd := exec.Command("git", "--git-dir", dir, "update-ref", "refs/tags/"+tag, commit)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("move tag %s in %s: %v: %s", tag, dir, err, out)
	}
	return nil
}
