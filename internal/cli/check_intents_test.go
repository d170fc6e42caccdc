package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// intentSeries makes a tree and a two-patch series with git: patch 1 adds a lock line
// (its intent: the line is present), patch 2 renames it (its intent: the old line is
// absent, and, when broken is set, a line nobody writes is present).
func intentSeries(t *testing.T, broken bool) (tree, pdir string) {
	t.Helper()
	isolateGitEnv(t)
	work := t.TempDir()
	up := filepath.Join(work, "up")
	file := filepath.Join(up, "aten/src/ATen/mps/Stream.mm")
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(body string) {
		if err := os.WriteFile(file, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(standInStream)
	git(t, work, "init", "-q", "-b", "main", up)
	git(t, up, "add", "-A")
	git(t, up, "commit", "-q", "-m", "base")
	write(strings.Replace(standInStream, "  flush();\n", "  std::lock_guard<std::mutex> lock(oldMutex_);\n  flush();\n", 1))
	git(t, up, "commit", "-q", "-a", "-m", "stream: lock commit\n\nIntent: present \"lock(oldMutex_)\" in aten/src/ATen/mps/Stream.mm")
	write(strings.Replace(standInStream, "  flush();\n", "  std::lock_guard<std::mutex> lock(streamMutex_);\n  flush();\n", 1))
	msg := "stream: rename the lock\n\nIntent: absent \"oldMutex_\" in aten/src/ATen/mps/Stream.mm"
	if broken {
		msg += "\nIntent: present \"lock(nobodyWritesThis_)\" in aten/src/ATen/mps/Stream.mm"
	}
	git(t, up, "commit", "-q", "-a", "-m", msg)
	pdir = filepath.Join(work, "patches")
	git(t, up, "format-patch", "-q", "--full-index", "--zero-commit", "--no-numbered", "--no-signature", "-o", pdir, "HEAD~2")
	names, err := filepath.Glob(filepath.Join(pdir, "*.patch"))
	if err != nil || len(names) != 2 {
		t.Fatalf("format-patch wrote %v, %v", names, err)
	}
	order := filepath.Base(names[0]) + "\n" + filepath.Base(names[1]) + "\n"
	if err := os.WriteFile(filepath.Join(pdir, "series"), []byte(order), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, up, "checkout", "-q", "HEAD~2")
	return up, pdir
}

// TestCheckTreeJudgesEachIntentRightAfterItsPatch: patch 1's intent holds after patch 1
// although patch 2 undoes it; a broken intent of patch 2 fails check (exit 1) and check
// does not claim the series applies cleanly.
func TestCheckTreeJudgesEachIntentRightAfterItsPatch(t *testing.T) {
	tree, pdir := intentSeries(t, false)
	code, stdout, stderr := runMain(t, "--json", "check", "--tree", tree, "--patches", pdir)
	if code != ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	var rep checkReport
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Intents) != 2 || !rep.Intents[0].OK || !rep.Intents[1].OK {
		t.Fatalf("intents: %+v", rep.Intents)
	}

	tree, pdir = intentSeries(t, true)
	code, stdout, _ = runMain(t, "--json", "check", "--tree", tree, "--patches", pdir)
	if code != ExitCheckFailed {
		t.Fatalf("broken intent: exit %d, want %d\n%s", code, ExitCheckFailed, stdout)
	}
	rep = checkReport{}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	var failed []string
	for _, r := range rep.Intents {
		if !r.OK {
			failed = append(failed, r.Intent)
		}
	}
	if len(failed) != 1 || !strings.Contains(failed[0], "nobodyWritesThis_") {
		t.Errorf("failed intents: %v (all: %+v)", failed, rep.Intents)
	}
	code, stdout, _ = runMain(t, "check", "--tree", tree, "--patches", pdir)
	if code != ExitCheckFailed || strings.Contains(stdout, "the series applies") && !strings.Contains(stdout, "intent") {
		t.Errorf("text: exit %d\n%s", code, stdout)
	}
}
