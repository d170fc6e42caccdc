package gitcli

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// newGit returns a Git with a deterministic environment rooted in a fresh temp dir and a
// log file there.
func newGit(t testing.TB) *Git {
	t.Helper()
	home := t.TempDir()
	return &Git{Env: DeterministicEnv(home), LogPath: filepath.Join(home, "git.log")}
}

// git runs a setup command and fails the test on error.
func git(t testing.TB, g *Git, dir string, args ...string) string {
	t.Helper()
	out, err := g.exec(context.Background(), call{op: "test setup", dir: dir, args: args})
	if err != nil {
		t.Fatalf("git %v: %v", args, err)
	}
	return strings.TrimSpace(string(out))
}

func writeFile(t testing.TB, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// newRepo makes a work tree with one commit holding files.
func newRepo(t testing.TB, g *Git, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	git(t, g, dir, "init", "-q")
	for name, data := range files {
		writeFile(t, filepath.Join(dir, name), data)
	}
	git(t, g, dir, "add", "-A")
	git(t, g, dir, "commit", "-q", "-m", "initial")
	return dir
}

func TestParseVersion(t *testing.T) {
	tests := []struct {
		in      string
		want    Version
		wantErr bool
	}{
		{in: "git version 2.39.5\n", want: Version{2, 39, 5, "git version 2.39.5"}},
		{in: "git version 2.39.3 (Apple Git-145)\n", want: Version{2, 39, 3, "git version 2.39.3 (Apple Git-145)"}},
		{in: "git version 2.45.1.windows.1", want: Version{2, 45, 1, "git version 2.45.1.windows.1"}},
		{in: "git version 3.0", want: Version{3, 0, 0, "git version 3.0"}},
		{in: "", wantErr: true},
		{in: "hub version 2.14.2", wantErr: true},
		{in: "git version two", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			have, err := ParseVersion(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseVersion(%q) error = %v, wantErr %v", tt.in, err, tt.wantErr)
			}
			if have != tt.want {
				t.Errorf("ParseVersion(%q) = %+v, want %+v", tt.in, have, tt.want)
			}
		})
	}
}

func FuzzParseVersion(f *testing.F) {
	for _, s := range []string{"git version 2.39.5\n", "git version 2.39.3 (Apple Git-145)", "git version 9999999.1", "", "git version 1.2.3.4.5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseVersion(s)
		if err != nil {
			return
		}
		if v.Major < 0 || v.Minor < 0 || v.Patch < 0 || !strings.HasPrefix(v.Raw, "git version ") {
			t.Errorf("ParseVersion(%q) = %+v", s, v)
		}
	})
}

func TestVersionRealGit(t *testing.T) {
	g := newGit(t)
	v, err := g.Version(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !v.AtLeast(2, 20) {
		t.Errorf("git %s is older than 2.20; these tests rely on a newer git", v)
	}
}

func TestNotFound(t *testing.T) {
	for _, bin := range []string{"/nonexistent/dir/git", "mpspatch-no-such-git"} {
		t.Run(bin, func(t *testing.T) {
			g := &Git{Bin: bin}
			_, err := g.Version(context.Background())
			var nf *NotFoundError
			if !errors.As(err, &nf) {
				t.Fatalf("Version with missing binary: error = %v (%T), want *NotFoundError", err, err)
			}
			if nf.Bin != bin {
				t.Errorf("NotFoundError.Bin = %q, want %q", nf.Bin, bin)
			}
		})
	}
}

// upstream builds a bare upstream repository with a submodule, as PyTorch has third_party/.
// It returns the upstream URL, the SHA to clone (not the tip: a later commit follows it),
// and the submodule SHA that commit pins (not the submodule's tip either).
func upstream(t *testing.T, g *Git) (url, pinned, subPinned string) {
	t.Helper()
	root := t.TempDir()

	sub := filepath.Join(root, "sub")
	os.Mkdir(sub, 0o755)
	git(t, g, sub, "init", "-q")
	writeFile(t, filepath.Join(sub, "lib.c"), "int v1;\n")
	git(t, g, sub, "add", "-A")
	git(t, g, sub, "commit", "-q", "-m", "sub v1")
	subPinned = git(t, g, sub, "rev-parse", "HEAD")
	writeFile(t, filepath.Join(sub, "lib.c"), "int v2;\n")
	git(t, g, sub, "commit", "-q", "-a", "-m", "sub v2")
	git(t, g, root, "clone", "-q", "--bare", sub, filepath.Join(root, "sub.git"))

	work := filepath.Join(root, "work")
	os.Mkdir(work, 0o755)
	git(t, g, work, "init", "-q")
	writeFile(t, filepath.Join(work, "setup.py"), "# v1\n")
	git(t, g, work, "add", "-A")
	git(t, g, work, "commit", "-q", "-m", "one")
	git(t, g, work, "submodule", "add", "-q", "file://"+filepath.Join(root, "sub.git"), "third_party/sub")
	git(t, g, filepath.Join(work, "third_party/sub"), "checkout", "-q", subPinned)
	writeFile(t, filepath.Join(work, "setup.py"), "# v2\n")
	git(t, g, work, "add", "-A")
	git(t, g, work, "commit", "-q", "-m", "two: pin submodule at v1")
	pinned = git(t, g, work, "rev-parse", "HEAD")
	writeFile(t, filepath.Join(work, "setup.py"), "# v3\n")
	git(t, g, work, "commit", "-q", "-a", "-m", "three")

	bare := filepath.Join(root, "upstream.git")
	git(t, g, root, "clone", "-q", "--bare", work, bare)
	return "file://" + bare, pinned, subPinned
}

func TestClone(t *testing.T) {
	for _, full := range []bool{false, true} {
		name := "shallow"
		if full {
			name = "full"
		}
		t.Run(name, func(t *testing.T) {
			g := newGit(t)
			url, pinned, subPinned := upstream(t, g)
			dir := filepath.Join(t.TempDir(), "pytorch")

			var mu sync.Mutex
			steps := map[string]int{}
			err := g.Clone(context.Background(), url, dir, pinned, CloneOptions{
				Full: full, Jobs: 4, Exclude: []string{"/.mpspatch/"},
				Progress: func(step, line string) {
					mu.Lock()
					steps[step]++
					mu.Unlock()
				},
			})
			if err != nil {
				t.Fatal(err)
			}

			head, err := g.HeadCommit(context.Background(), dir)
			if err != nil {
				t.Fatal(err)
			}
			if head != pinned {
				t.Errorf("HEAD = %s, want the pinned %s", head, pinned)
			}
			if data, _ := os.ReadFile(filepath.Join(dir, "setup.py")); string(data) != "# v2\n" {
				t.Errorf("setup.py = %q, want the pinned commit's %q", data, "# v2\n")
			}
			if data, _ := os.ReadFile(filepath.Join(dir, "third_party/sub/lib.c")); string(data) != "int v1;\n" {
				t.Errorf("submodule lib.c = %q, want the pinned %q", data, "int v1;\n")
			}
			if have := git(t, g, filepath.Join(dir, "third_party/sub"), "rev-parse", "HEAD"); have != subPinned {
				t.Errorf("submodule HEAD = %s, want %s", have, subPinned)
			}
			wantShallow := "true"
			if full {
				wantShallow = "false"
			}
			if have := git(t, g, dir, "rev-parse", "--is-shallow-repository"); have != wantShallow {
				t.Errorf("is-shallow-repository = %s, want %s", have, wantShallow)
			}
			if branch := git(t, g, dir, "rev-parse", "--abbrev-ref", "HEAD"); branch != "HEAD" {
				t.Errorf("HEAD is on branch %q, want detached", branch)
			}

			// A log file inside the tree under the excluded directory leaves it clean.
			writeFile(t, filepath.Join(dir, ".mpspatch/logs/clone.log"), "x\n")
			clean, dirty, err := g.IsClean(context.Background(), dir)
			if err != nil {
				t.Fatal(err)
			}
			if !clean {
				t.Errorf("fresh clone is not clean: %v", dirty)
			}
			for _, step := range []string{"init", "fetch", "checkout", "submodules"} {
				if steps[step] == 0 {
					t.Errorf("no progress reported for step %q (have %v)", step, steps)
				}
			}
			log, err := os.ReadFile(g.LogPath)
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"$ git fetch --progress --no-tags", "$ git submodule update --init --recursive"} {
				if !strings.Contains(string(log), want) {
					t.Errorf("log lacks %q", want)
				}
			}
		})
	}
}

func TestCloneErrors(t *testing.T) {
	g := newGit(t)
	url, pinned, _ := upstream(t, g)
	ctx := context.Background()

	t.Run("short sha", func(t *testing.T) {
		err := g.Clone(ctx, url, filepath.Join(t.TempDir(), "x"), pinned[:12], CloneOptions{})
		if err == nil || !strings.Contains(err.Error(), "full 40-hex") {
			t.Errorf("error = %v, want a complaint about the SHA", err)
		}
	})
	t.Run("existing repository", func(t *testing.T) {
		dir := newRepo(t, g, map[string]string{"a": "a\n"})
		err := g.Clone(ctx, url, dir, pinned, CloneOptions{})
		if !errors.Is(err, ErrExists) {
			t.Errorf("error = %v, want ErrExists", err)
		}
	})
	t.Run("unknown commit", func(t *testing.T) {
		missing := strings.Repeat("ab", 20)
		err := g.Clone(ctx, url, filepath.Join(t.TempDir(), "x"), missing, CloneOptions{})
		var ge *Error
		if !errors.As(err, &ge) {
			t.Fatalf("error = %v (%T), want *Error", err, err)
		}
		if ge.Op != "clone: fetch "+missing {
			t.Errorf("Op = %q, want the fetch step", ge.Op)
		}
		for _, want := range []string{g.LogPath, "git clone: fetch", "exit status"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not mention %q", err, want)
			}
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		err := g.Clone(cctx, url, filepath.Join(t.TempDir(), "x"), pinned, CloneOptions{})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("error = %v, want context.Canceled", err)
		}
	})
}

func TestHeadCommit(t *testing.T) {
	g := newGit(t)
	ctx := context.Background()
	dir := newRepo(t, g, map[string]string{"a": "1\n"})
	want := git(t, g, dir, "rev-parse", "HEAD")

	t.Run("branch", func(t *testing.T) {
		have, err := g.HeadCommit(ctx, dir)
		if err != nil || have != want {
			t.Errorf("HeadCommit = %q, %v; want %q", have, err, want)
		}
	})
	t.Run("detached", func(t *testing.T) {
		writeFile(t, filepath.Join(dir, "a"), "2\n")
		git(t, g, dir, "commit", "-q", "-a", "-m", "two")
		git(t, g, dir, "checkout", "-q", "--detach", want)
		have, err := g.HeadCommit(ctx, dir)
		if err != nil || have != want {
			t.Errorf("HeadCommit = %q, %v; want %q", have, err, want)
		}
	})
	t.Run("packed refs", func(t *testing.T) {
		packed := newRepo(t, g, map[string]string{"a": "1\n"})
		git(t, g, packed, "checkout", "-q", "-b", "topic/one")
		want := git(t, g, packed, "rev-parse", "HEAD")
		git(t, g, packed, "pack-refs", "--all")
		if _, err := os.Stat(filepath.Join(packed, ".git", "refs", "heads", "topic", "one")); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("the branch is still a loose ref after pack-refs: %v", err)
		}
		// Answered in-process: with no git to fall back on, the packed ref must be read.
		noGit := &Git{Bin: filepath.Join(t.TempDir(), "no-git"), Env: g.Env}
		have, err := noGit.HeadCommit(ctx, packed)
		if err != nil || have != want {
			t.Errorf("HeadCommit = %q, %v; want %q", have, err, want)
		}
	})
	t.Run("not a repository", func(t *testing.T) {
		_, err := g.HeadCommit(ctx, t.TempDir())
		if !errors.Is(err, ErrNotRepository) {
			t.Errorf("error = %v, want ErrNotRepository", err)
		}
	})
	t.Run("no commits", func(t *testing.T) {
		empty := t.TempDir()
		git(t, g, empty, "init", "-q")
		if _, err := g.HeadCommit(ctx, empty); err == nil {
			t.Error("HeadCommit of a repository without commits: want an error")
		}
	})
}

// TestRefFiles: the in-process reader resolves what git's files backend stores and refuses
// what it does not know, so that HeadCommit asks git instead; it never reads outside .git.
func TestRefFiles(t *testing.T) {
	const sha = "0123456789abcdef0123456789abcdef01234567"
	for _, tt := range []struct {
		name  string
		files map[string]string
		want  string // "" for an error
	}{
		{"detached", map[string]string{"HEAD": sha + "\n"}, sha},
		{"branch", map[string]string{"HEAD": "ref: refs/heads/main\n", "refs/heads/main": sha + "\n"}, sha},
		{"symbolic chain", map[string]string{"HEAD": "ref: refs/heads/a\n", "refs/heads/a": "ref: refs/heads/b\n", "refs/heads/b": sha}, sha},
		{"packed", map[string]string{"HEAD": "ref: refs/heads/main\n", "packed-refs": "# pack-refs with: peeled fully-peeled sorted\n" +
			"1111111111111111111111111111111111111111 refs/heads/other\n" + sha + " refs/heads/main\n^2222222222222222222222222222222222222222\n"}, sha},
		{"loose before packed", map[string]string{"HEAD": "ref: refs/heads/main\n", "refs/heads/main": sha,
			"packed-refs": "1111111111111111111111111111111111111111 refs/heads/main\n"}, sha},
		{"unborn branch", map[string]string{"HEAD": "ref: refs/heads/main\n"}, ""},
		{"short SHA", map[string]string{"HEAD": "0123456\n"}, ""},
		{"not hex", map[string]string{"HEAD": strings.Repeat("z", 40)}, ""},
		{"escapes .git", map[string]string{"HEAD": "ref: refs/../../outside\n"}, ""},
		{"outside refs", map[string]string{"HEAD": "ref: config\n"}, ""},
		{"bad packed line", map[string]string{"HEAD": "ref: refs/heads/main\n", "packed-refs": "garbage\n"}, ""},
		{"no HEAD", map[string]string{}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			dotgit := filepath.Join(root, "repo", ".git")
			if err := os.MkdirAll(dotgit, 0o755); err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(root, "repo", "outside"), sha) // what "escapes .git" must not reach
			for name, data := range tt.files {
				writeFile(t, filepath.Join(dotgit, name), data)
			}
			ref, err := storer.ResolveReference(refFiles{dir: dotgit}, plumbing.HEAD)
			switch {
			case tt.want == "" && err == nil:
				t.Errorf("resolved to %s, want an error", ref.Hash())
			case tt.want != "" && (err != nil || ref.Hash().String() != tt.want):
				t.Errorf("resolve = %v, %v; want %s", ref, err, tt.want)
			}
		})
	}
}

func TestIsClean(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name  string
		edit  func(t *testing.T, g *Git, dir string)
		want  bool
		wantE []StatusEntry
	}{
		{name: "clean", edit: func(*testing.T, *Git, string) {}, want: true},
		{name: "modified", edit: func(t *testing.T, g *Git, dir string) {
			writeFile(t, filepath.Join(dir, "a"), "changed\n")
		}, wantE: []StatusEntry{{" M", "a"}}},
		{name: "untracked", edit: func(t *testing.T, g *Git, dir string) {
			writeFile(t, filepath.Join(dir, "new file"), "x\n")
		}, wantE: []StatusEntry{{"??", "new file"}}},
		{name: "ignored", edit: func(t *testing.T, g *Git, dir string) {
			writeFile(t, filepath.Join(dir, "build/x.o"), "x\n")
		}, want: true},
		{name: "renamed", edit: func(t *testing.T, g *Git, dir string) {
			git(t, g, dir, "mv", "a", "b")
		}, wantE: []StatusEntry{{"R ", "b"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newGit(t)
			dir := newRepo(t, g, map[string]string{"a": "1\n", ".gitignore": "build/\n"})
			tt.edit(t, g, dir)
			have, entries, err := g.IsClean(ctx, dir)
			if err != nil {
				t.Fatal(err)
			}
			if have != tt.want || !slices.Equal(entries, tt.wantE) {
				t.Errorf("IsClean = %v %v, want %v %v", have, entries, tt.want, tt.wantE)
			}
		})
	}
}

func FuzzParseStatusZ(f *testing.F) {
	for _, s := range []string{" M a\x00", "?? new file\x00R  b\x00a\x00", "", "\x00\x00", "XY\x00"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		entries, err := parseStatusZ(b)
		if err != nil {
			return
		}
		for _, e := range entries {
			if len(e.XY) != 2 || e.Path == "" {
				t.Errorf("parseStatusZ(%q) gave %+v", b, e)
			}
		}
	})
}

func TestCommit(t *testing.T) {
	ctx := context.Background()
	g := newGit(t)
	dir := newRepo(t, g, map[string]string{"a": "1\n", "b": "1\n"})
	writeFile(t, filepath.Join(dir, "a"), "2\n")
	writeFile(t, filepath.Join(dir, "b"), "2\n")
	msg := "mps: guard the kernel cache\n\nWhy: concurrent encode.\n\nMpspatch-Id: 0003\n"
	sha, err := g.Commit(ctx, dir, msg, CommitOptions{Paths: []string{"a"}})
	if err != nil {
		t.Fatal(err)
	}
	if head := git(t, g, dir, "rev-parse", "HEAD"); sha != head {
		t.Errorf("Commit returned %s, HEAD is %s", sha, head)
	}
	if have := git(t, g, dir, "log", "-1", "--format=%B"); have != strings.TrimSpace(msg) {
		t.Errorf("message = %q, want %q", have, msg)
	}
	if have := git(t, g, dir, "show", "--name-only", "--format=", "HEAD"); have != "a" {
		t.Errorf("commit touched %q, want only a", have)
	}
	// Same content, identity and dates: the same SHA on any machine.
	g2 := newGit(t)
	dir2 := newRepo(t, g2, map[string]string{"a": "1\n", "b": "1\n"})
	writeFile(t, filepath.Join(dir2, "a"), "2\n")
	sha2, err := g2.Commit(ctx, dir2, msg, CommitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sha2 != sha {
		t.Errorf("deterministic env gave two SHAs for the same commit: %s and %s", sha, sha2)
	}
	if _, err := g2.Commit(ctx, dir2, "nothing", CommitOptions{}); err == nil {
		t.Error("Commit with nothing staged: want an error")
	}
	if _, err := g.Commit(ctx, dir, "nothing\n", CommitOptions{Paths: []string{"a"}, AllowEmpty: true}); err != nil {
		t.Errorf("Commit with AllowEmpty: %v", err)
	}
}

func TestApply(t *testing.T) {
	ctx := context.Background()
	g := newGit(t)
	dir := newRepo(t, g, map[string]string{"f.c": "one\ntwo\nthree\n"})
	patch := []byte("--- a/f.c\n+++ b/f.c\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n")

	if err := g.Apply(ctx, dir, patch, ApplyOptions{Check: true}); err != nil {
		t.Fatalf("Apply --check: %v", err)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "f.c")); string(data) != "one\ntwo\nthree\n" {
		t.Errorf("--check wrote the file: %q", data)
	}
	if err := g.Apply(ctx, dir, patch, ApplyOptions{}); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "f.c")); string(data) != "one\nTWO\nthree\n" {
		t.Errorf("after Apply f.c = %q", data)
	}
	err := g.Apply(ctx, dir, patch, ApplyOptions{})
	var ge *Error
	if !errors.As(err, &ge) {
		t.Fatalf("applying twice: error = %v (%T), want *Error", err, err)
	}
	if !strings.Contains(ge.Stderr, "patch failed: f.c:1") {
		t.Errorf("Stderr = %q, want git's file:line explanation", ge.Stderr)
	}
	if err := g.Apply(ctx, dir, patch, ApplyOptions{Reverse: true}); err != nil {
		t.Fatalf("Apply --reverse: %v", err)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "f.c")); string(data) != "one\ntwo\nthree\n" {
		t.Errorf("after reverse f.c = %q", data)
	}
}

func TestMergeFile(t *testing.T) {
	ctx := context.Background()
	g := newGit(t)
	base := "a\nb\nc\nd\ne\n"
	tests := []struct {
		name          string
		current       string
		other         string
		wantConflicts int
		wantText      string
	}{
		{name: "disjoint edits merge", current: "A\nb\nc\nd\ne\n", other: "a\nb\nc\nd\nE\n",
			wantText: "A\nb\nc\nd\nE\n"},
		{name: "same line conflicts", current: "a\nb\nX\nd\ne\n", other: "a\nb\nY\nd\ne\n", wantConflicts: 1,
			wantText: "a\nb\n<<<<<<< v2.10\nX\n||||||| v2.9.1\nc\n=======\nY\n>>>>>>> 0003-guard.patch\nd\ne\n"},
		// git merge-file refuses binary files; git apply --3way takes them as a conflict
		// that keeps the current side, and so does MergeFile.
		{name: "binary current is a conflict", current: "A\x00\nb\nc\nd\ne\n", other: "a\nb\nc\nd\nE\n", wantConflicts: 1,
			wantText: "A\x00\nb\nc\nd\ne\n"},
		{name: "binary other is a conflict", current: "A\nb\nc\nd\ne\n", other: "a\nb\nc\nd\n\x00E\n", wantConflicts: 1,
			wantText: "A\nb\nc\nd\ne\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := g.MergeFile(ctx,
				MergeInput{Label: "v2.10", Data: []byte(tt.current)},
				MergeInput{Label: "v2.9.1", Data: []byte(base)},
				MergeInput{Label: "0003-guard.patch", Data: []byte(tt.other)})
			if err != nil {
				t.Fatal(err)
			}
			if res.Conflicts != tt.wantConflicts || string(res.Merged) != tt.wantText {
				t.Errorf("MergeFile = %d conflicts\n%s\nwant %d\n%s", res.Conflicts, res.Merged, tt.wantConflicts, tt.wantText)
			}
		})
	}
}

// BenchmarkHeadCommit compares go-git's in-process HEAD read with `git rev-parse HEAD`;
// DESIGN.md allows go-git only where it is no slower. The ratio is gogit/git time.
func BenchmarkHeadCommit(b *testing.B) {
	g := newGit(b)
	dir := newRepo(b, g, map[string]string{"a": "1\n"})
	ctx := context.Background()
	measure := func(f func() (string, error)) time.Duration {
		start := time.Now()
		for i := 0; i < 50; i++ {
			if _, err := f(); err != nil {
				b.Fatal(err)
			}
		}
		return time.Since(start) / 50
	}
	var gogit, cli time.Duration
	for b.Loop() {
		gogit += measure(func() (string, error) { return g.HeadCommit(ctx, dir) })
		cli += measure(func() (string, error) { return g.RevParse(ctx, dir, "HEAD") })
	}
	b.ReportMetric(float64(gogit.Nanoseconds())/float64(b.N), "gogit-ns/op")
	b.ReportMetric(float64(cli.Nanoseconds())/float64(b.N), "git-ns/op")
	b.ReportMetric(float64(gogit)/float64(cli), "gogit/git")
}
