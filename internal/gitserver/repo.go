package gitserver

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
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
// are the same on every run. It returns the commit ID of each commit. The objects go
// straight into one pack (git fast-import), as a forge serves them: no work tree, no
// loose objects, so a 20,000-file repository takes seconds.
func BuildRepo(dir string, commits []Commit) ([]string, error) {
	os.RemoveAll(dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("build repo %s: %w", dir, err)
	}
	git := func(stdin *bytes.Buffer, args ...string) (string, error) {
		cmd := exec.Command("git", append([]string{"--git-dir", dir}, args...)...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull)
		if stdin != nil {
			cmd.Stdin = stdin
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("build repo %s: git %s: %v: %s", dir, strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out)), nil
	}
	if _, err := git(nil, "init", "-q", "--bare", "-b", "main"); err != nil {
		return nil, err
	}
	const who = "upstream <upstream@example.invalid> 1735689600 +0000"
	var in bytes.Buffer
	for i, c := range commits {
		msg := c.Message
		if msg == "" {
			msg = fmt.Sprintf("commit %d", i+1)
		}
		fmt.Fprintf(&in, "commit refs/heads/main\nmark :%d\ncommitter %s\ndata %d\n%s\n", i+1, who, len(msg), msg)
		if i > 0 {
			fmt.Fprintf(&in, "from :%d\n", i)
		}
		paths := make([]string, 0, len(c.Files))
		for p := range c.Files {
			paths = append(paths, p)
		}
		sort.Strings(paths)
		for _, p := range paths {
			if strings.ContainsAny(p, "\n\"") {
				return nil, fmt.Errorf("build repo %s: path %q: quotes and newlines are not supported", dir, p)
			}
			if c.Files[p] == "" {
				fmt.Fprintf(&in, "D %s\n", p)
				continue
			}
			fmt.Fprintf(&in, "M 100644 inline %s\ndata %d\n%s\n", p, len(c.Files[p]), c.Files[p])
		}
		links := make([]string, 0, len(c.Gitlinks))
		for p := range c.Gitlinks {
			links = append(links, p)
		}
		sort.Strings(links)
		for _, p := range links {
			fmt.Fprintf(&in, "M 160000 %s %s\n", c.Gitlinks[p], p)
		}
		in.WriteString("\n")
		for _, t := range c.Tags {
			fmt.Fprintf(&in, "reset refs/tags/%s\nfrom :%d\n\n", t, i+1)
		}
		for _, t := range c.AnnotatedTags {
			m := "release " + t
			fmt.Fprintf(&in, "tag %s\nfrom :%d\ntagger %s\ndata %d\n%s\n", t, i+1, who, len(m), m)
		}
	}
	if _, err := git(&in, "fast-import", "--quiet"); err != nil {
		return nil, err
	}
	ids := make([]string, len(commits))
	for i := range commits {
		id, err := git(nil, "rev-parse", fmt.Sprintf("main~%d", len(commits)-1-i))
		if err != nil {
			return nil, err
		}
		ids[i] = id
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
