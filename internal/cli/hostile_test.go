package cli

import (
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"
)

// TestHostileCorpus runs the hostile-input corpus in internal/series/testdata/hostile:
// patches and planted state (journals, linked state directories, FIFOs, links to
// devices) that must be refused. Each case lays out a parent directory holding the tree
// (a real `git init`, so .git is there to be attacked), the series and whatever sits
// beside them, runs mpspatch commands through Main, checks each exit code and message,
// and then requires the parent directory — the tree, its .git and its neighbours — to
// be byte for byte, mode for mode, as it was before.
//
// A case's comment holds the setup directives and the commands:
//
//	symlink tree/.mpspatch -> .git/hooks   create a symbolic link (target verbatim)
//	fifo patches/series                    create a named pipe
//	> apply --tree TREE --patches PATCHES  run mpspatch (TREE, PATCHES, PARENT: absolute paths)
//	exit 3                                 its exit code
//	stdout REGEXP / stderr REGEXP          must match; !stdout / !stderr must not
func TestHostileCorpus(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, "config"))
	t.Setenv("XDG_CACHE_HOME", filepath.Join(home, "cache"))
	cases, err := filepath.Glob(filepath.Join("..", "series", "testdata", "hostile", "*.txtar"))
	if err != nil || len(cases) == 0 {
		t.Fatalf("no corpus: %v", err)
	}
	for _, file := range cases {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			runHostileCase(t, file)
		})
	}
}

func runHostileCase(t *testing.T, file string) {
	ar, err := txtar.ParseFile(file)
	if err != nil {
		t.Fatal(err)
	}
	parent := t.TempDir()
	tree, patches := filepath.Join(parent, "tree"), filepath.Join(parent, "patches")
	for _, d := range []string{tree, patches} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	gitInit := exec.Command("git", "init", "-q", tree)
	gitInit.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	if out, err := gitInit.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	for _, f := range ar.Files {
		p := filepath.Join(parent, filepath.FromSlash(f.Name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	type check struct {
		neg    bool
		stream string
		re     *regexp.Regexp
	}
	type command struct {
		args   []string
		exit   int
		checks []check
	}
	var cmds []*command
	for i, line := range strings.Split(string(ar.Comment), "\n") {
		line = strings.TrimSpace(line)
		where := fmt.Sprintf("%s:%d", filepath.Base(file), i+1)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		verb, rest, _ := strings.Cut(line, " ")
		switch verb {
		case "symlink":
			name, target, ok := strings.Cut(rest, " -> ")
			if !ok {
				t.Fatalf("%s: want symlink NAME -> TARGET", where)
			}
			p := filepath.Join(parent, filepath.FromSlash(name))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
		case "fifo":
			if err := syscall.Mkfifo(filepath.Join(parent, filepath.FromSlash(rest)), 0o644); err != nil {
				t.Fatal(err)
			}
		case ">":
			args := strings.Fields(rest)
			for k, a := range args {
				args[k] = strings.NewReplacer("TREE", tree, "PATCHES", patches, "PARENT", parent).Replace(a)
			}
			cmds = append(cmds, &command{args: args})
		case "exit", "stdout", "stderr", "!stdout", "!stderr":
			if len(cmds) == 0 {
				t.Fatalf("%s: %s before any command", where, verb)
			}
			c := cmds[len(cmds)-1]
			if verb == "exit" {
				if c.exit, err = strconv.Atoi(rest); err != nil {
					t.Fatalf("%s: %v", where, err)
				}
				continue
			}
			re, err := regexp.Compile(rest)
			if err != nil {
				t.Fatalf("%s: %v", where, err)
			}
			c.checks = append(c.checks, check{neg: verb[0] == '!', stream: strings.TrimPrefix(verb, "!"), re: re})
		default:
			t.Fatalf("%s: unknown directive %q", where, verb)
		}
	}
	if len(cmds) == 0 {
		t.Fatal("case runs no command")
	}
	before := snapshotAll(t, parent)
	for _, c := range cmds {
		code, stdout, stderr := runMain(t, c.args...)
		name := strings.Join(c.args, " ")
		if code != c.exit {
			t.Errorf("%s: exit %d, want %d\nstdout: %s\nstderr: %s", name, code, c.exit, stdout, stderr)
		}
		for _, ck := range c.checks {
			text := stdout
			if ck.stream == "stderr" {
				text = stderr
			}
			if ck.re.MatchString(text) == ck.neg {
				t.Errorf("%s: %s %s %q:\n%s", name, ck.stream, map[bool]string{false: "lacks", true: "matches"}[ck.neg], ck.re, text)
			}
		}
	}
	if after := snapshotAll(t, parent); after != before {
		t.Errorf("the tree, its .git or its neighbours changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// snapshotAll lists everything under dir, .git included: path, type, mode, and a hash of
// the content (or a link's target).
func snapshotAll(t *testing.T, dir string) string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		desc := fi.Mode().String()
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			desc += " -> " + target
		case fi.Mode().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			desc += fmt.Sprintf(" %x", sha256.Sum256(data))
		}
		lines = append(lines, rel+" "+desc)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}
