package gitcli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/mpspatch/mpspatch/internal/statekey"
)

func TestMain(m *testing.M) {
	// Clone keeps its marker's MAC key in the user's config directory: give the tests one
	// of their own.
	home, err := os.MkdirTemp("", "mpspatch-gitcli-home-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	for _, k := range []string{"XDG_CONFIG_HOME", "XDG_CACHE_HOME"} {
		os.Setenv(k, filepath.Join(home, k))
	}
	code := m.Run()
	os.RemoveAll(home)
	os.Exit(code)
}

// startedClone makes dir as a clone killed right after its .git was put in place: the
// marker and nothing else. It returns the marker.
func startedClone(t *testing.T, dir, pinned string) *cloneMarker {
	t.Helper()
	key, err := statekey.Ensure()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	real, err := canonicalDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := &cloneMarker{Version: cloneMarkerVersion, Dir: real, Commit: pinned, ID: strings.Repeat("5a", 16)}
	if err := createGitDir(dir, m, key); err != nil {
		t.Fatal(err)
	}
	return m
}

// assertCloned checks dir is a finished clone of pinned, submodule included.
func assertCloned(t *testing.T, g *Git, dir, pinned, subPinned string) {
	t.Helper()
	if have := git(t, g, dir, "rev-parse", "HEAD"); have != pinned {
		t.Errorf("HEAD %s, want %s", have, pinned)
	}
	if have := git(t, g, filepath.Join(dir, "third_party/sub"), "rev-parse", "HEAD"); have != subPinned {
		t.Errorf("submodule HEAD %s, want %s", have, subPinned)
	}
	if st := git(t, g, dir, "status", "--porcelain", "--untracked-files=all"); st != "" {
		t.Errorf("tree not clean:\n%s", st)
	}
	for _, stray := range []string{".git/" + CloneMarker, CloneStage} {
		if _, err := os.Lstat(filepath.Join(dir, stray)); err == nil {
			t.Errorf("%s is left behind", stray)
		}
	}
}

// TestCloneResumesFromEveryWindow puts a directory in each state a clone killed at that
// moment leaves, and checks that Clone finishes from there: the windows issue 19 found
// stuck (a .git without the remote; in the old order also a .git without the marker,
// which can no longer happen), and the leftovers of killed git processes.
func TestCloneResumesFromEveryWindow(t *testing.T) {
	g := newGit(t)
	url, pinned, subPinned := upstream(t, g)
	ctx := context.Background()
	fetched := func(t *testing.T, dir string) {
		git(t, g, dir, "init", "-q")
		git(t, g, dir, "remote", "add", "origin", url)
		git(t, g, dir, "fetch", "-q", "--depth", "1", "origin", pinned)
	}
	windows := []struct {
		name  string
		setup func(t *testing.T, dir string)
	}{
		{"killed while making .git, before the rename", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, CloneStage, CloneMarker), "half")
		}},
		{".git holds the marker alone (before git init)", func(t *testing.T, dir string) {
			startedClone(t, dir, pinned)
		}},
		{"after git init, before the remote", func(t *testing.T, dir string) {
			startedClone(t, dir, pinned)
			git(t, g, dir, "init", "-q")
		}},
		{"the remote's URL written, its fetch refspec not", func(t *testing.T, dir string) {
			startedClone(t, dir, pinned)
			git(t, g, dir, "init", "-q")
			git(t, g, dir, "config", "remote.origin.url", url)
		}},
		{"the remote added, pointing elsewhere", func(t *testing.T, dir string) {
			startedClone(t, dir, pinned)
			git(t, g, dir, "init", "-q")
			git(t, g, dir, "remote", "add", "origin", "file:///nonexistent")
		}},
		{"stale index.lock and shallow.lock of killed gits", func(t *testing.T, dir string) {
			startedClone(t, dir, pinned)
			fetched(t, dir)
			writeFile(t, filepath.Join(dir, ".git", "index.lock"), "")
			writeFile(t, filepath.Join(dir, ".git", "shallow.lock"), "")
		}},
		{"a submodule checked out halfway", func(t *testing.T, dir string) {
			startedClone(t, dir, pinned)
			fetched(t, dir)
			git(t, g, dir, "checkout", "-q", "--detach", pinned)
			git(t, g, dir, "submodule", "update", "-q", "--init", "--depth", "1")
			// What a submodule checkout killed halfway leaves: HEAD at the commit, files
			// missing or half written.
			if err := os.Remove(filepath.Join(dir, "third_party", "sub", "lib.c")); err != nil {
				t.Fatal(err)
			}
		}},
		{"a half-made submodule", func(t *testing.T, dir string) {
			startedClone(t, dir, pinned)
			fetched(t, dir)
			git(t, g, dir, "checkout", "-q", "--detach", pinned)
			// What a submodule clone killed before its fetch leaves: a git directory
			// without the commit, and the work tree pointing at it.
			mod := filepath.Join(dir, ".git", "modules", "third_party", "sub")
			git(t, g, dir, "init", "-q", "--bare", mod)
			git(t, g, dir, "config", "-f", filepath.Join(mod, "config"), "core.bare", "false")
			git(t, g, dir, "config", "-f", filepath.Join(mod, "config"), "core.worktree", "../../../../third_party/sub")
			writeFile(t, filepath.Join(dir, "third_party", "sub", ".git"), "gitdir: ../../.git/modules/third_party/sub\n")
			git(t, g, dir, "submodule", "init", "-q")
		}},
	}
	for _, w := range windows {
		t.Run(w.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "pytorch")
			w.setup(t, dir)
			if err := g.Clone(ctx, url, dir, pinned, CloneOptions{Jobs: 2}); err != nil {
				t.Fatalf("the re-run: %v", err)
			}
			assertCloned(t, g, dir, pinned, subPinned)
		})
	}
}

// TestCloneResumesThroughAnotherName: the directory named through a symbolic link (as
// macOS's /tmp is /private/tmp) is the same clone.
func TestCloneResumesThroughAnotherName(t *testing.T) {
	g := newGit(t)
	url, pinned, subPinned := upstream(t, g)
	dir := filepath.Join(t.TempDir(), "pytorch")
	startedClone(t, dir, pinned)
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	if err := g.Clone(context.Background(), url, link, pinned, CloneOptions{}); err != nil {
		t.Fatal(err)
	}
	assertCloned(t, g, dir, pinned, subPinned)
}

// TestCloneStopsProcessesOfTheInterruptedClone: a git process that outlived a killed
// clone carries the clone's ID in its environment; the re-run kills it before touching
// the repository, and leaves alone a process that does not carry it.
func TestCloneStopsProcessesOfTheInterruptedClone(t *testing.T) {
	g := newGit(t)
	url, pinned, subPinned := upstream(t, g)
	dir := filepath.Join(t.TempDir(), "pytorch")
	m := startedClone(t, dir, pinned)
	start := func(id string) *exec.Cmd {
		cmd := exec.Command("sleep", "1000")
		cmd.Env = append(os.Environ(), cloneIDEnv+"="+id)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	orphan := start(m.ID)
	other := start(strings.Repeat("0", 32))
	defer other.Process.Kill()
	if err := g.Clone(context.Background(), url, dir, pinned, CloneOptions{}); err != nil {
		t.Fatal(err)
	}
	assertCloned(t, g, dir, pinned, subPinned)
	if err := orphan.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("the interrupted clone's process: %v, want killed", err)
	}
	if err := other.Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("a process of another clone was stopped: %v", err)
	}
}

// TestCloneRefusesAMarkerItCannotVouchFor: a marker another user's mpspatch wrote, one
// written for another directory (a copied clone), an older mpspatch's unauthenticated one
// or one that is not a regular file: the clone is not resumed and nothing in the
// directory is touched, its lock files included.
func TestCloneRefusesAMarkerItCannotVouchFor(t *testing.T) {
	g := newGit(t)
	url, pinned, _ := upstream(t, g)
	key, err := statekey.Ensure()
	if err != nil {
		t.Fatal(err)
	}
	write := func(t *testing.T, dir string, m *cloneMarker, k []byte) {
		data, err := encodeCloneMarker(m, k)
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, ".git", CloneMarker), string(data))
	}
	tests := []struct {
		name, why string
		plant     func(t *testing.T, dir string)
	}{
		{"another user's key", "its MAC does not verify", func(t *testing.T, dir string) {
			write(t, dir, &cloneMarker{Version: 1, Dir: dir, Commit: pinned, ID: strings.Repeat("ab", 16)}, []byte(strings.Repeat("k", 32)))
		}},
		{"another directory's", "written for /elsewhere/pytorch", func(t *testing.T, dir string) {
			write(t, dir, &cloneMarker{Version: 1, Dir: "/elsewhere/pytorch", Commit: pinned, ID: strings.Repeat("ab", 16)}, key)
		}},
		{"an older mpspatch's", "no MAC line", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, ".git", CloneMarker), pinned+"\n")
		}},
		{"a FIFO", "not a regular file", func(t *testing.T, dir string) {
			os.MkdirAll(filepath.Join(dir, ".git"), 0o755)
			if err := syscall.Mkfifo(filepath.Join(dir, ".git", CloneMarker), 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{"a symbolic link", "too many levels of symbolic links", func(t *testing.T, dir string) {
			os.MkdirAll(filepath.Join(dir, ".git"), 0o755)
			target := filepath.Join(t.TempDir(), "marker")
			os.WriteFile(target, nil, 0o644)
			if err := os.Symlink(target, filepath.Join(dir, ".git", CloneMarker)); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "pytorch")
			tt.plant(t, dir)
			lock := filepath.Join(dir, ".git", "index.lock")
			writeFile(t, lock, "theirs")
			if ok, err := InterruptedClone(dir); ok || !errors.Is(err, ErrForeignClone) {
				t.Errorf("InterruptedClone: %v, %v; want refused", ok, err)
			}
			err := g.Clone(context.Background(), url, dir, pinned, CloneOptions{})
			if !errors.Is(err, ErrForeignClone) || !strings.Contains(err.Error(), tt.why) {
				t.Fatalf("have %v, want ErrForeignClone saying %q", err, tt.why)
			}
			if _, err := os.Stat(lock); err != nil {
				t.Errorf("the lock in a clone that is not ours was touched: %v", err)
			}
			if _, err := os.Stat(filepath.Join(dir, ".git", "HEAD")); err == nil {
				t.Error("git init ran in a clone that is not ours")
			}
		})
	}
}
