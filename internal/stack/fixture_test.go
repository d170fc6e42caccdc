package stack

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/mpspatch/mpspatch/internal/gitcli"
	"github.com/mpspatch/mpspatch/internal/series"
)

// env is a deterministic git environment: private HOME, fixed identity and dates, and
// (when hostile) a ~/.gitconfig that sets everything that could change export's mails.
type env struct {
	t    testing.TB
	home string
	vars []string
	g    *gitcli.Git
}

const hostileGitconfig = `[diff]
	noprefix = true
	mnemonicPrefix = true
	renames = copies
	statGraphWidth = 10
	context = 7
	algorithm = patience
	interHunkContext = 5
	suppressBlankEmpty = true
[color]
	ui = always
	diff = always
[core]
	abbrev = 7
	quotePath = false
[format]
	signature = hostile signature
	numbered = true
	subjectPrefix = HOSTILE
	headers = "X-Hostile: yes\n"
	to = someone@example.com
	thread = shallow
	signOff = true
	coverLetter = true
	useAutoBase = true
	from = true
	notes = true
	noprefix = true
[log]
	showSignature = true
[i18n]
	logOutputEncoding = ISO-8859-1
`

func newEnv(t testing.TB, hostile bool) *env {
	t.Helper()
	home := t.TempDir()
	gitconfig := "[init]\n\tdefaultBranch = main\n[advice]\n\tdetachedHead = false\n"
	if hostile {
		gitconfig += hostileGitconfig
	}
	if err := os.WriteFile(filepath.Join(home, ".gitconfig"), []byte(gitconfig), 0o644); err != nil {
		t.Fatal(err)
	}
	vars := []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=" + filepath.Join(home, ".gitconfig"),
		"GIT_AUTHOR_NAME=Test Author", "GIT_AUTHOR_EMAIL=author@example.com",
		"GIT_COMMITTER_NAME=Test Committer", "GIT_COMMITTER_EMAIL=committer@example.com",
		"GIT_AUTHOR_DATE=2025-01-02T03:04:05+00:00", "GIT_COMMITTER_DATE=2025-01-02T03:04:05+00:00",
		"LC_ALL=C", "TZ=UTC", "GIT_TERMINAL_PROMPT=0",
	}
	return &env{t: t, home: home, vars: vars, g: &gitcli.Git{Env: vars}}
}

// git runs a setup command and returns its trimmed stdout.
func (e *env) git(dir string, args ...string) string {
	e.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir, cmd.Env = dir, e.vars
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		e.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, errb.String())
	}
	return strings.TrimSpace(out.String())
}

func write(t testing.TB, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// lines makes a file of n numbered lines with a prefix.
func lines(prefix string, n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "%s line %d\n", prefix, i)
	}
	return b.String()
}

func replaceLine(s, old, new string) string {
	if !strings.Contains(s, old+"\n") {
		panic("no line " + old)
	}
	return strings.Replace(s, old+"\n", new+"\n", 1)
}

// fixture is an upstream repository tagged v1 and a series of six patches on it,
// exported by Export into patches/.
type fixture struct {
	*env
	up      string // upstream work tree, at v1 on main
	patches string // the exported series
	files   map[string]string
}

// The six patches: what each changes.
var fixturePatches = []struct {
	subject, file, old, new, trailers string
}{
	{"a: make line 10 safe", "a.c", "a line 10", "a line 10 SAFE", "Intent: present \"a line 10 SAFE\" in a.c"},
	{"b: guard line 20", "b.c", "b line 20", "b line 20 GUARDED", ""},
	{"new: add a helper file", "new.c", "", "helper\n", "Seed: report 7"},
	{"c: per-thread line 5", "c.c", "c line 5", "c line 5 THREAD", ""},
	{"d: lock line 30", "d.c", "d line 30", "d line 30 LOCKED", ""},
	{"e: drop the legacy path", "e.c", "e line 15", "e line 15 NEW", "Intent: absent \"legacy_call\" in e.c"},
}

func newFixture(t testing.TB, hostile bool) *fixture {
	t.Helper()
	e := newEnv(t, hostile)
	root := t.TempDir()
	up := filepath.Join(root, "up")
	f := &fixture{env: e, up: up, patches: filepath.Join(root, "patches"), files: map[string]string{}}
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		f.files[n+".c"] = lines(n, 40)
		write(t, filepath.Join(up, n+".c"), f.files[n+".c"])
	}
	e.git(up, "init", "-q")
	e.git(up, "add", "-A")
	e.git(up, "commit", "-q", "-m", "upstream base")
	e.git(up, "tag", "v1")
	e.git(up, "checkout", "-q", "-b", "dev")
	for _, p := range fixturePatches {
		path := filepath.Join(up, p.file)
		if p.old == "" {
			write(t, path, p.new)
		} else {
			write(t, path, replaceLine(read(t, path), p.old, p.new))
		}
		msg := p.subject + "\n\nWhy: the " + p.file + " change.\n"
		if p.trailers != "" {
			msg += "\n" + p.trailers + "\n"
		}
		e.git(up, "add", "-A")
		e.git(up, "commit", "-q", "--cleanup=verbatim", "-m", msg)
	}
	if _, err := Export(context.Background(), e.g, ExportOptions{Tree: up, Base: "v1", Dir: f.patches}); err != nil {
		t.Fatal(err)
	}
	e.git(up, "checkout", "-q", "main")
	return f
}

// clone makes a work tree of the upstream checked out (detached) at rev.
func (f *fixture) clone(rev string) string {
	f.t.Helper()
	dir := filepath.Join(f.t.TempDir(), "tree")
	f.git(filepath.Dir(dir), "clone", "-q", f.up, dir)
	f.git(dir, "checkout", "-q", "--detach", rev)
	return dir
}

func (f *fixture) series() *series.Series {
	f.t.Helper()
	s, err := series.Load(os.DirFS(f.patches), ".", f.patches)
	if err != nil {
		f.t.Fatal(err)
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

// applyCommits runs ApplyCommits on a fresh clone at v1 and returns the tree.
func (f *fixture) applyCommits() string {
	f.t.Helper()
	tree := f.clone("v1")
	if _, err := ApplyCommits(context.Background(), f.g, openRoot(f.t, tree), f.series(), ApplyCommitsOptions{Tree: tree}); err != nil {
		f.t.Fatal(err)
	}
	return tree
}

var intentRE = regexp.MustCompile(`^(present|absent) "([^"]*)" in (\S+)$`)

// testIntents is a small stand-in for metalcheck's grammar (which this package may not
// import): present/absent "TEXT" in PATH.
func testIntents(p *series.Patch, read func(string) ([]byte, error)) []string {
	var broken []string
	for _, tr := range p.TrailerValues("Intent") {
		m := intentRE.FindStringSubmatch(tr.Value)
		if m == nil {
			broken = append(broken, tr.Value)
			continue
		}
		data, _ := read(m[3])
		if bytes.Contains(data, []byte(m[2])) != (m[1] == "present") {
			broken = append(broken, tr.Value)
		}
	}
	return broken
}

// dirFiles returns every file in dir by name.
func dirFiles(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		out[e.Name()] = read(t, filepath.Join(dir, e.Name()))
	}
	return out
}
