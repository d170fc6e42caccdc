package upstream

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mpspatch/mpspatch/internal/gitcli"
	"github.com/mpspatch/mpspatch/internal/gitserver"
	"github.com/mpspatch/mpspatch/internal/series"
)

// numbered returns n lines "<name> line i".
func numbered(name string, n int) []string {
	l := make([]string, n)
	for i := range l {
		l[i] = fmt.Sprintf("%s line %d", name, i+1)
	}
	return l
}

func join(l []string) string { return strings.Join(l, "\n") + "\n" }

// with returns l with line i (1-based) replaced.
func with(l []string, i int, s string) []string {
	out := append([]string(nil), l...)
	out[i-1] = s
	return out
}

func prepend(l []string, n int) []string {
	return append(numbered("upstream header", n), l...)
}

// fixture is a generated upstream served over HTTPS, the series written against its
// pinned tag, and an isolated git environment that trusts the server.
type fixture struct {
	srv    *gitserver.Server
	url    string
	base   string // the pinned commit (v1.0.0)
	tagged map[string]string
	series *series.Series
	env    []string
	blobs  map[string]string // path@tag -> blob ID, for the touched files
	filler []string          // blob IDs of files the series does not touch
}

var touched = []string{"a.cpp", "b.cpp", "c.cpp", "d.cpp", "e.cpp", "f.cpp"}

// newFixture builds the upstream: v1.0.0 (the base: every patch exact), v1.1.0 (one
// patch of each outcome), v1.2.0 (another mix, b.cpp as in v1.1.0), main beyond; a
// submodule, and untouched files the check must never fetch.
func newFixture(t testing.TB) *fixture {
	t.Helper()
	return newFixtureWith(t, gitserver.Options{})
}

// newFixtureWith is newFixture with a server started with opts (credentials, say).
func newFixtureWith(t testing.TB, opts gitserver.Options) *fixture {
	t.Helper()
	root := t.TempDir()
	home := t.TempDir()
	env := gitcli.DeterministicEnv(home)

	sub, err := gitserver.BuildRepo(filepath.Join(root, "sub.git"), []gitserver.Commit{{Files: map[string]string{"third.c": "int third;\n"}}})
	if err != nil {
		t.Fatal(err)
	}
	base := map[string]string{
		".gitmodules": "[submodule \"third_party/sub\"]\n\tpath = third_party/sub\n\turl = ../sub.git\n",
	}
	for _, f := range touched {
		base["aten/"+f] = join(numbered(f, 30))
	}
	for i := range 40 {
		base[fmt.Sprintf("other/file%02d.txt", i)] = join(numbered(fmt.Sprintf("other %d", i), 5))
	}
	patched := func(f string) []string { return with(numbered(f, 30), 10, f+" PATCHED") }
	v11 := map[string]string{
		"aten/b.cpp":       join(prepend(numbered("b.cpp", 30), 5)),                      // offset 5
		"aten/c.cpp":       join(with(numbered("c.cpp", 30), 12, "c.cpp upstream edit")), // context moved: 3-way
		"aten/d.cpp":       join(with(numbered("d.cpp", 30), 10, "d.cpp UPSTREAM")),      // conflict
		"aten/e.cpp":       join(patched("e.cpp")),                                       // absorbed
		"aten/f.cpp":       "",                                                           // missing file
		"other/file00.txt": "changed upstream\n",
	}
	v12 := map[string]string{
		"aten/a.cpp": join(prepend(numbered("a.cpp", 30), 3)),                         // offset 3
		"aten/c.cpp": join(with(numbered("c.cpp", 30), 11, "c.cpp touches the hunk")), // conflict
		"aten/d.cpp": join(patched("d.cpp")),                                          // absorbed
		"aten/e.cpp": join(numbered("e.cpp", 30)),                                     // exact again
		"aten/f.cpp": join(numbered("f.cpp", 30)),                                     // back: exact
	}
	ids, err := gitserver.BuildRepo(filepath.Join(root, "up.git"), []gitserver.Commit{
		{Message: "base", Files: base, Gitlinks: map[string]string{"third_party/sub": sub[0]}, AnnotatedTags: []string{"v1.0.0"}},
		{Message: "release 1.1", Files: v11, Tags: []string{"v1.1.0"}, AnnotatedTags: []string{"v1.1.0-rc1"}},
		{Message: "release 1.2", Files: v12, AnnotatedTags: []string{"v1.2.0"}},
		{Message: "on main", Files: map[string]string{"README": "main\n"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := gitserver.Start(root, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)

	fx := &fixture{srv: srv, url: srv.URL + "/up.git", base: ids[0], env: append(env, srv.Env()...),
		tagged: map[string]string{"v1.0.0": ids[0], "v1.1.0": ids[1], "v1.2.0": ids[2], "main": ids[3]},
		blobs:  map[string]string{}}
	bare := filepath.Join(root, "up.git")
	for tag, id := range fx.tagged {
		for _, f := range touched {
			out, err := exec.Command("git", "--git-dir", bare, "rev-parse", "--verify", "-q", id+":aten/"+f).Output()
			if err == nil {
				fx.blobs["aten/"+f+"@"+tag] = strings.TrimSpace(string(out))
			}
		}
	}
	for i := range 40 {
		out, err := exec.Command("git", "--git-dir", bare, "rev-parse", fmt.Sprintf("%s:other/file%02d.txt", ids[0], i)).Output()
		if err != nil {
			t.Fatal(err)
		}
		fx.filler = append(fx.filler, strings.TrimSpace(string(out)))
	}
	var paths []string
	for _, f := range touched {
		paths = append(paths, "aten/"+f)
	}
	fx.series = makeSeries(t, base, paths, func(p string) string { return join(patched(strings.TrimPrefix(p, "aten/"))) })
	return fx
}

// makeSeries writes the base's files at paths into a work repository, commits one patch
// per path (its content replaced by patched(path)) and exports them with git
// format-patch into a series directory.
func makeSeries(t testing.TB, base map[string]string, paths []string, patched func(string) string) *series.Series {
	t.Helper()
	s, _ := makeSeriesDir(t, base, paths, patched)
	return s
}

func makeSeriesDir(t testing.TB, base map[string]string, paths []string, patched func(string) string) (*series.Series, string) {
	t.Helper()
	work := t.TempDir()
	pdir := t.TempDir()
	gitT := func(args ...string) { t.Helper(); gitIn(t, work, args...) }
	gitT("init", "-q", "-b", "main")
	for _, p := range paths {
		os.MkdirAll(filepath.Dir(filepath.Join(work, p)), 0o755)
		os.WriteFile(filepath.Join(work, p), []byte(base[p]), 0o644)
	}
	gitT("add", "-A")
	gitT("commit", "-q", "-m", "base")
	var order []string
	for i, p := range paths {
		os.WriteFile(filepath.Join(work, p), []byte(patched(p)), 0o644)
		slug := strings.ToLower(strings.NewReplacer(".", "-", "_", "-").Replace(filepath.Base(p)))
		gitT("commit", "-q", "-a", "-m", "patch "+slug)
		order = append(order, fmt.Sprintf("%04d-patch-%s.patch", i+1, slug))
	}
	gitT("format-patch", "-q", "--full-index", "--zero-commit", "--no-signature", "-o", pdir, "main~"+fmt.Sprint(len(paths)))
	if err := os.WriteFile(filepath.Join(pdir, "series"), []byte(strings.Join(order, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := series.Load(os.DirFS(pdir), ".", pdir)
	if err != nil {
		t.Fatalf("load the generated series: %v", err)
	}
	return s, pdir
}
