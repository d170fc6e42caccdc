package cli

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// mkTree makes dirs and files (a name ending in "/" is a directory) under root.
func mkTree(t *testing.T, root string, names ...string) {
	t.Helper()
	for _, n := range names {
		p := filepath.Join(root, n)
		if n[len(n)-1] == '/' {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestTreeTopFromSubdirectory(t *testing.T) {
	noEnv := func(string) string { return "" }
	for _, tt := range []struct {
		name  string
		setup func(t *testing.T, root string)
		start string // relative to root
		want  string // relative to root; "." for "no top found, or the start"
	}{
		{"git checkout, from deep inside", func(t *testing.T, r string) {
			mkTree(t, r, "pt/.git/", "pt/aten/src/ATen/mps/")
		}, "pt/aten/src/ATen/mps", "pt"},
		{"the start is the top", func(t *testing.T, r string) {
			mkTree(t, r, "pt/.git/", "pt/aten/")
		}, "pt", "."},
		{"a .git file (worktree, submodule) marks the top", func(t *testing.T, r string) {
			mkTree(t, r, "pt/aten/src/")
			if err := os.WriteFile(filepath.Join(r, "pt/.git"), []byte("gitdir: /etc\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, "pt/aten/src", "pt"},
		{"a .git link is not followed, even dangling", func(t *testing.T, r string) {
			mkTree(t, r, "pt/aten/")
			if err := os.Symlink("/nonexistent/hostile", filepath.Join(r, "pt/.git")); err != nil {
				t.Fatal(err)
			}
		}, "pt/aten", "pt"},
		{"a .git FIFO is only looked at, never opened", func(t *testing.T, r string) {
			mkTree(t, r, "pt/aten/")
			if err := syscall.Mkfifo(filepath.Join(r, "pt/.git"), 0o644); err != nil {
				t.Skipf("mkfifo: %v", err)
			}
		}, "pt/aten", "pt"},
		{"the nearest top wins (a submodule inside)", func(t *testing.T, r string) {
			mkTree(t, r, "pt/.git/", "pt/third_party/fmt/.git", "pt/third_party/fmt/src/")
		}, "pt/third_party/fmt/src", "pt/third_party/fmt"},
		{"a source tree without git: setup.py and aten/", func(t *testing.T, r string) {
			mkTree(t, r, "pt/setup.py", "pt/aten/src/ATen/")
		}, "pt/aten/src/ATen", "pt"},
		{"setup.py alone is not a top", func(t *testing.T, r string) {
			mkTree(t, r, "pt/setup.py", "pt/sub/")
		}, "pt/sub", "."},
		{"setup.py as a link is not a top", func(t *testing.T, r string) {
			mkTree(t, r, "pt/real.py", "pt/aten/sub/")
			if err := os.Symlink("real.py", filepath.Join(r, "pt/setup.py")); err != nil {
				t.Fatal(err)
			}
		}, "pt/aten/sub", "."},
		{"nothing up to the ceiling", func(t *testing.T, r string) {
			mkTree(t, r, "a/b/c/")
		}, "a/b/c", "."},
	} {
		t.Run(tt.name, func(t *testing.T) {
			root, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			tt.setup(t, root)
			// The test's own temporary directory may sit in a checkout: go no higher.
			env := func(k string) string {
				if k == "GIT_CEILING_DIRECTORIES" {
					return filepath.Dir(root)
				}
				return noEnv(k)
			}
			have := findTreeTopFrom(filepath.Join(root, tt.start), env)
			want := tt.want
			if want != "." {
				want = filepath.Join(root, want)
			}
			if have != want {
				t.Errorf("findTreeTopFrom(%s) = %q, want %q", tt.start, have, want)
			}
		})
	}
}

// TestTreeTopCeiling: GIT_CEILING_DIRECTORIES keeps the walk below a checkout that holds
// the start, as it keeps git's; the start itself is still looked at.
func TestTreeTopCeiling(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	mkTree(t, root, "pt/.git/", "pt/sub/deep/", "other/.git/")
	start := filepath.Join(root, "pt/sub/deep")
	ceiling := func(v string) func(string) string {
		return func(k string) string {
			if k == "GIT_CEILING_DIRECTORIES" {
				return v
			}
			return ""
		}
	}
	if have := findTreeTopFrom(start, ceiling(filepath.Dir(root))); have != filepath.Join(root, "pt") {
		t.Errorf("with the ceiling above: %q, want the checkout", have)
	}
	if have := findTreeTopFrom(start, ceiling(filepath.Join(root, "pt"))); have != "." {
		t.Errorf("with the ceiling at the checkout: %q, want \".\" (the walk may not go up into it)", have)
	}
	// A relative entry is ignored, as git ignores it; the list separator splits entries.
	if have := findTreeTopFrom(start, ceiling("pt"+string(os.PathListSeparator)+filepath.Join(root, "pt", "sub"))); have != "." {
		t.Errorf("with the ceiling at sub in a list: %q, want \".\"", have)
	}
	if have := findTreeTopFrom(filepath.Join(root, "pt"), ceiling(filepath.Join(root, "pt"))); have != "." {
		t.Errorf("from the ceiling itself: %q, want \".\" (the start is the top)", have)
	}
}

// TestTreeTopThroughLink: a start reached through a symbolic link walks up the real
// directories, as git's getcwd does, and names the real top.
func TestTreeTopThroughLink(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	mkTree(t, root, "real/pt/.git/", "real/pt/aten/mps/", "elsewhere/")
	link := filepath.Join(root, "elsewhere", "mps")
	if err := os.Symlink(filepath.Join(root, "real/pt/aten/mps"), link); err != nil {
		t.Fatal(err)
	}
	env := func(k string) string {
		if k == "GIT_CEILING_DIRECTORIES" {
			return filepath.Dir(root)
		}
		return ""
	}
	if have, want := findTreeTopFrom(link, env), filepath.Join(root, "real/pt"); have != want {
		t.Errorf("through a link: %q, want %q", have, want)
	}
}

// TestSameDevice: a mount point's device differs from the directory it is mounted on,
// which is where findTreeTop stops walking.
func TestSameDevice(t *testing.T) {
	rootInfo, err := os.Lstat("/")
	if err != nil {
		t.Fatal(err)
	}
	if !sameDevice(rootInfo, rootInfo) {
		t.Error("a directory is not on its own device")
	}
	// /proc is a mount of its own where the kernel lists it as one.
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil || !strings.Contains(string(mounts), " /proc ") {
		t.Skip("no /proc mount here to compare with")
	}
	proc, err := os.Lstat("/proc")
	if err != nil {
		t.Fatal(err)
	}
	if sameDevice(rootInfo, proc) {
		t.Error("/proc, a mount of its own, is said to be on the device of /")
	}
}
