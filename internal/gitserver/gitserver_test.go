package gitserver

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func git(t *testing.T, env []string, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Env = append(cmd.Env, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_TERMINAL_PROMPT=0",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

func TestServesPartialFetchAndRecordsWants(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	work := filepath.Join(t.TempDir(), "work")
	os.MkdirAll(work, 0o755)
	git(t, nil, work, "init", "-q")
	os.WriteFile(filepath.Join(work, "a.txt"), []byte("a\n"), 0o644)
	git(t, nil, work, "add", "-A")
	git(t, nil, work, "commit", "-q", "-m", "a")
	head := git(t, nil, work, "rev-parse", "HEAD")
	git(t, nil, root, "clone", "-q", "--bare", work, "up.git")

	s, err := Start(root, Options{User: "u", Password: "p4ss"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	dst := filepath.Join(t.TempDir(), "c")
	url := strings.Replace(s.URL, "https://", "https://u:p4ss@", 1) + "/up.git"
	git(t, s.Env(), "", "clone", "-q", "--filter=blob:none", "--no-checkout", url, dst)
	if have := git(t, nil, dst, "rev-parse", "HEAD"); have != head {
		t.Fatalf("cloned HEAD %s, want %s", have, head)
	}
	var fetches int
	for _, r := range s.Requests() {
		if r.Command == "fetch" {
			fetches++
			// A clone wants HEAD once for HEAD and once for the branch.
			if len(r.Wants) == 0 || r.Wants[0] != head {
				t.Errorf("fetch wants %v, want [%s]", r.Wants, head)
			}
			if r.Bytes == 0 {
				t.Errorf("fetch response counted 0 bytes")
			}
		}
	}
	if fetches != 1 {
		t.Errorf("have %d fetch requests, want 1: %+v", fetches, s.Requests())
	}

	t.Run("wrong credentials refused", func(t *testing.T) {
		bad := strings.Replace(s.URL, "https://", "https://u:wrong@", 1) + "/up.git"
		cmd := exec.Command("git", "ls-remote", bad)
		cmd.Env = append(os.Environ(), append(s.Env(), "GIT_TERMINAL_PROMPT=0", "GIT_ASKPASS=/bin/false")...)
		if out, err := cmd.CombinedOutput(); err == nil {
			t.Fatalf("ls-remote with a wrong password succeeded: %s", out)
		}
	})
}
