package gitcli

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestCloneLeavesALockThatALiveProcessHolds: a lock file some running process has open
// (a git the user started in the half-made clone, say) is not stale: the re-run stops,
// naming the lock and the process, and removes nothing.
func TestCloneLeavesALockThatALiveProcessHolds(t *testing.T) {
	g := newGit(t)
	url, pinned, _ := upstream(t, g)
	dir := filepath.Join(t.TempDir(), "pytorch")
	startedClone(t, dir, pinned)
	git(t, g, dir, "init", "-q")
	lock := filepath.Join(dir, ".git", "index.lock")
	writeFile(t, lock, "")
	f, err := os.Open(lock)
	if err != nil {
		t.Fatal(err)
	}
	holder := exec.Command("sleep", "1000")
	holder.ExtraFiles = []*os.File{f} // open in the child as fd 3
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	defer holder.Process.Kill()
	err = g.Clone(context.Background(), url, dir, pinned, CloneOptions{})
	if err == nil || !strings.Contains(err.Error(), lock+" is held by a running process (pid "+strconv.Itoa(holder.Process.Pid)+")") {
		t.Fatalf("have %v, want a refusal naming %s and pid %d", err, lock, holder.Process.Pid)
	}
	if _, err := os.Stat(lock); err != nil {
		t.Errorf("the held lock was removed: %v", err)
	}
}
