package series

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/mpspatch/mpspatch/internal/statekey"
)

// gitEnv isolates git from the machine's configuration and fixes identities and dates so
// that generated patches are byte-for-byte reproducible.
func gitEnv(home string) []string {
	return append(os.Environ(),
		"HOME="+home, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=Test Author", "GIT_AUTHOR_EMAIL=author@example.invalid",
		"GIT_COMMITTER_NAME=Test Author", "GIT_COMMITTER_EMAIL=author@example.invalid",
		"GIT_AUTHOR_DATE=2025-12-14T12:00:00Z", "GIT_COMMITTER_DATE=2025-12-14T12:00:00Z",
	)
}

func git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = gitEnv(dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// step is one patch of a generated series: a message and an edit of the work tree.
type genStep struct {
	slug string
	msg  string
	edit func(t testing.TB, dir string)
}

// fixture is an upstream base tree plus a series generated from it by real git.
type fixture struct {
	repo    string // git repo, checked out at the base
	patches string // series directory
}

// newFixture writes base into a fresh repo, commits each step, exports the series with
// git format-patch, and checks the base out again.
func newFixture(t testing.TB, base map[string]string, steps ...genStep) fixture {
	t.Helper()
	root := t.TempDir()
	repo := filepath.Join(root, "repo")
	pdir := filepath.Join(root, "patches")
	if err := os.MkdirAll(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	git(t, repo, "init", "-q", "-b", "main")
	writeFiles(t, repo, base)
	git(t, repo, "add", "-A")
	git(t, repo, "commit", "-q", "-m", "base")
	for _, s := range steps {
		s.edit(t, repo)
		git(t, repo, "add", "-A")
		git(t, repo, "commit", "-q", "-m", s.msg)
	}
	git(t, repo, "format-patch", "-q", "--full-index", "--zero-commit", "--no-numbered", "--no-signature", "--binary", "-o", pdir, "main~"+fmt.Sprint(len(steps)))
	made, _ := filepath.Glob(filepath.Join(pdir, "*.patch"))
	sort.Strings(made)
	var order []string
	for i, m := range made {
		name := fmt.Sprintf("%04d-%s.patch", i+1, steps[i].slug)
		if err := os.Rename(m, filepath.Join(pdir, name)); err != nil {
			t.Fatal(err)
		}
		order = append(order, name)
	}
	writeFiles(t, pdir, map[string]string{"series": "# test series\n" + strings.Join(order, "\n") + "\n"})
	git(t, repo, "checkout", "-q", "main~"+fmt.Sprint(len(steps)))
	return fixture{repo: repo, patches: pdir}
}

func writeFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// snapshot reads every file under dir except .git, with its mode.
func snapshot(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if fi.IsDir() {
			if fi.Name() == ".git" {
				return filepath.SkipDir
			}
			return nil
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			target, err := os.Readlink(p)
			out[filepath.ToSlash(rel)] = "link:" + target
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		out[filepath.ToSlash(rel)] = fmt.Sprintf("%o:%s", fi.Mode().Perm(), data)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func lines(n int, f func(i int) string) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		b.WriteString(f(i))
		b.WriteString("\n")
	}
	return b.String()
}

func replaceIn(t testing.TB, dir, name, old, new string) {
	t.Helper()
	p := filepath.Join(dir, name)
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), old) {
		t.Fatalf("%s does not contain %q", name, old)
	}
	if err := os.WriteFile(p, []byte(strings.Replace(string(data), old, new, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mustLoad(t testing.TB, dir string) *Series {
	t.Helper()
	s, err := Load(os.DirFS(dir), ".", dir)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func openRoot(t testing.TB, dir string) *os.Root {
	t.Helper()
	r, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// crashApplyAt runs an apply of s on root that stops at the write phase's step, as a
// killed process would (the test's crash hook panics there), and leaves the tree as that
// crash would.
func crashApplyAt(t testing.TB, root *os.Root, s *Series, step string) {
	t.Helper()
	crashHook = func(at string) {
		if at == step {
			panic("crash")
		}
	}
	defer func() { crashHook = nil }()
	func() {
		defer func() { _ = recover() }()
		_, _ = Apply(root, s, Options{})
	}()
}

// committedJournal reads and authenticates the journal a write left in root.
func committedJournal(t testing.TB, root *os.Root) journal {
	t.Helper()
	data, err := readJournal(root)
	if err != nil {
		t.Fatal(err)
	}
	key, _, err := statekey.Load()
	if err != nil {
		t.Fatal(err)
	}
	j, err := decodeJournal(data, key)
	if err != nil {
		t.Fatal(err)
	}
	return j
}
