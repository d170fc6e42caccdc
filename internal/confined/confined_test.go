package confined

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func openRoot(t *testing.T, dir string) *os.Root {
	t.Helper()
	r, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestOpenRefusesEveryUnsafeComponent(t *testing.T) {
	tests := []struct {
		name   string
		plant  func(t *testing.T, tree, outside string)
		rel    string
		at     string // the path the error names, relative to the tree
		reason string
	}{
		{"link leaving the tree", func(t *testing.T, tree, outside string) {
			must(t, os.Symlink(outside, filepath.Join(tree, ".mpspatch")))
		}, ".mpspatch/run/stamps", ".mpspatch", "symbolic link"},
		{"link staying inside the tree", func(t *testing.T, tree, outside string) {
			must(t, os.MkdirAll(filepath.Join(tree, ".git/hooks"), 0o755))
			must(t, os.MkdirAll(filepath.Join(tree, ".mpspatch"), 0o755))
			must(t, os.Symlink("../.git/hooks", filepath.Join(tree, ".mpspatch/run")))
		}, ".mpspatch/run/stamps", ".mpspatch/run", "symbolic link (to ../.git/hooks)"},
		{"link as the last component", func(t *testing.T, tree, outside string) {
			must(t, os.MkdirAll(filepath.Join(tree, ".mpspatch/run"), 0o755))
			must(t, os.Symlink(outside, filepath.Join(tree, ".mpspatch/run/stamps")))
		}, ".mpspatch/run/stamps", ".mpspatch/run/stamps", "symbolic link"},
		{"file where a directory should be", func(t *testing.T, tree, outside string) {
			must(t, os.WriteFile(filepath.Join(tree, ".mpspatch"), nil, 0o644))
		}, ".mpspatch/run", ".mpspatch", "not a directory"},
		{"under .git", func(t *testing.T, tree, outside string) {}, ".git/hooks", ".git/hooks", "under .git"},
		{"under .GIT", func(t *testing.T, tree, outside string) {}, "x/.GIT/y", "x/.GIT/y", "under .git"},
		{"leaving by ..", func(t *testing.T, tree, outside string) {}, "a/../../b", "a/../../b", "not a clean path"},
		{"absolute", func(t *testing.T, tree, outside string) {}, "/etc", "/etc", "not a clean path"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			work := t.TempDir()
			tree, outside := filepath.Join(work, "tree"), filepath.Join(work, "outside")
			must(t, os.MkdirAll(tree, 0o755))
			must(t, os.MkdirAll(outside, 0o755))
			tt.plant(t, tree, outside)
			root := openRoot(t, tree)
			for _, create := range []bool{false, true} {
				_, err := Open(root, tree, tt.rel, create)
				var ue *UnsafeError
				if !errors.As(err, &ue) {
					t.Fatalf("create=%v: have %v, want an UnsafeError", create, err)
				}
				if want := filepath.Join(tree, tt.at); ue.Path != want || !strings.Contains(ue.Error(), tt.reason) {
					t.Errorf("create=%v: have %q, want the path %s and %q", create, ue.Error(), want, tt.reason)
				}
				if err := Check(root, tree, tt.rel); !errors.As(err, &ue) {
					t.Errorf("Check: have %v, want an UnsafeError", err)
				}
			}
			if entries, _ := os.ReadDir(outside); len(entries) != 0 {
				t.Errorf("something was created outside the tree: %v", entries)
			}
		})
	}
}

func TestOpenCreatesAndCheckCreatesNothing(t *testing.T) {
	tree := t.TempDir()
	root := openRoot(t, tree)
	if err := Check(root, tree, "a/b/c"); err != nil {
		t.Fatalf("Check of a missing path: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(tree, "a")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Check created something: %v", err)
	}
	if _, err := Open(root, tree, "a/b/c", false); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Open without create of a missing path: %v", err)
	}
	d, err := Open(root, tree, "a/b/c", true)
	must(t, err)
	defer d.Close()
	if d.Path() != filepath.Join(tree, "a/b/c") {
		t.Errorf("path: %s", d.Path())
	}
	must(t, d.WriteFile("x.json", []byte("one\n"), 0o644))
	must(t, d.WriteFile("x.json", []byte("two\n"), 0o644))
	if data, err := os.ReadFile(filepath.Join(tree, "a/b/c/x.json")); err != nil || string(data) != "two\n" {
		t.Errorf("written: %q, %v", data, err)
	}
	entries, _ := os.ReadDir(d.Path())
	if len(entries) != 1 {
		t.Errorf("temporary files left: %v", entries)
	}
}

func TestWritesReplaceLinksAndNeverFollowThem(t *testing.T) {
	tree := t.TempDir()
	victim := filepath.Join(t.TempDir(), "victim")
	must(t, os.WriteFile(victim, []byte("mine\n"), 0o444))
	root := openRoot(t, tree)
	d, err := Open(root, tree, ".", false)
	must(t, err)
	defer d.Close()
	must(t, os.Symlink(victim, filepath.Join(tree, "stamp.json")))
	must(t, os.Symlink(victim, filepath.Join(tree, "run.log")))

	must(t, d.WriteFile("stamp.json", []byte("{}\n"), 0o644))
	f, p, err := d.Create("run.log")
	must(t, err)
	f.Close()
	if p != filepath.Join(tree, "run-2.log") {
		t.Errorf("Create beside a planted link: %s", p)
	}
	if fi, err := os.Lstat(filepath.Join(tree, "stamp.json")); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("stamp.json: %v, %v", fi, err)
	}
	if data, err := os.ReadFile(victim); err != nil || string(data) != "mine\n" {
		t.Errorf("the victim changed: %q, %v", data, err)
	}
	must(t, d.Remove("run.log"))
	if _, err := os.Stat(victim); err != nil {
		t.Errorf("Remove of a link removed its target: %v", err)
	}
}

func TestReadFileReadsOnlyBoundedRegularFiles(t *testing.T) {
	tree := t.TempDir()
	root := openRoot(t, tree)
	d, err := Open(root, tree, ".", false)
	must(t, err)
	defer d.Close()
	must(t, os.WriteFile(filepath.Join(tree, "ok"), []byte("12345"), 0o644))
	must(t, os.WriteFile(filepath.Join(tree, "big"), make([]byte, 100), 0o644))
	must(t, os.Symlink("ok", filepath.Join(tree, "link")))
	must(t, syscall.Mkfifo(filepath.Join(tree, "fifo"), 0o644))

	if data, err := d.ReadFile("ok", 5); err != nil || string(data) != "12345" {
		t.Errorf("ok: %q, %v", data, err)
	}
	if _, err := d.ReadFile("big", 99); !errors.Is(err, ErrTooLarge) {
		t.Errorf("big: %v", err)
	}
	for _, name := range []string{"link", "fifo"} {
		if _, err := d.ReadFile(name, 100); !errors.Is(err, ErrNotRegular) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestCheckNoLinksFindsOneAtAnyDepth(t *testing.T) {
	tree := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(tree, "report/logs"), 0o755))
	must(t, os.WriteFile(filepath.Join(tree, "report/junit.xml"), nil, 0o644))
	root := openRoot(t, tree)
	d, err := Open(root, tree, "report", false)
	must(t, err)
	defer d.Close()
	must(t, d.CheckNoLinks())
	must(t, os.Symlink("/etc/passwd", filepath.Join(tree, "report/logs/probe-patched.log")))
	var ue *UnsafeError
	if err := d.CheckNoLinks(); !errors.As(err, &ue) || ue.Path != filepath.Join(tree, "report/logs/probe-patched.log") {
		t.Errorf("have %v", err)
	}
}

func TestIdentityTellsACopyFromTheCheckout(t *testing.T) {
	work := t.TempDir()
	a, b := filepath.Join(work, "a"), filepath.Join(work, "b")
	must(t, os.MkdirAll(a, 0o755))
	must(t, os.MkdirAll(b, 0o755))
	ida, err := Identity(openRoot(t, a), a)
	must(t, err)
	again, err := Identity(openRoot(t, a), a)
	must(t, err)
	idb, err := Identity(openRoot(t, b), b)
	must(t, err)
	if ida != again {
		t.Errorf("the same checkout, two identities: %s, %s", ida, again)
	}
	if ida == idb {
		t.Errorf("two checkouts, one identity: %s", ida)
	}
}
