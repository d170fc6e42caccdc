package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/mpspatch/mpspatch/internal/cli"
)

var update = flag.Bool("update", false, "rewrite the expected output in testdata/script/*.txtar")

// TestMain lets the test binary double as the mpspatch command: testscript copies it
// into a PATH directory under that name, and `exec mpspatch` in a script runs cli.Main
// in a child process with the script's environment and working directory.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		// As main.go: Ctrl-C and SIGTERM cancel the context of a command that writes.
		"mpspatch": func() {
			ctx, stop := cli.InterruptContext(os.Args[1:])
			code := cli.Main(ctx, os.Args[1:], cli.System())
			stop()
			os.Exit(code)
		},
		// hangpython stands in for an interpreter that never answers: it creates
		// $HANG_READY, so a script knows it runs, then waits to be killed.
		"hangpython": func() {
			if err := os.WriteFile(os.Getenv("HANG_READY"), nil, 0o644); err != nil {
				fmt.Fprintln(os.Stderr, "hangpython:", err)
				os.Exit(1)
			}
			time.Sleep(10 * time.Minute)
			os.Exit(1)
		},
		"fakepython": func() { os.Exit(fakePython()) },
	})
}

// TestScripts runs every end-to-end script in testdata/script. Each script builds its own
// upstream repository with the real git, exports the patch commits with git format-patch,
// and drives mpspatch against a checkout of the base.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 filepath.Join("testdata", "script"),
		UpdateScripts:       *update,
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		Setup:               isolateGit,
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"exits":     cmdExits,
			"treesum":   cmdTreesum,
			"validjson": cmdValidJSON,
			"jsonerror": cmdJSONError,
			"waitfile":  cmdWaitFile,
		},
	})
}

// fixedDate makes commit IDs, and so format-patch output, the same on every run.
const fixedDate = "2025-01-02T03:04:05+00:00"

// isolateGit gives each script its own HOME and a fixed identity and clock, and keeps the
// machine's git configuration out: scripts must not depend on who runs them.
func isolateGit(env *testscript.Env) error {
	home := filepath.Join(env.WorkDir, "home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		return fmt.Errorf("create script home: %w", err)
	}
	// Settings a user's own ~/.gitconfig would otherwise decide.
	gitconfig := "[init]\n\tdefaultBranch = main\n" +
		"[core]\n\tautocrlf = false\n\tfileMode = true\n" +
		"[commit]\n\tgpgSign = false\n" +
		"[advice]\n\tdetachedHead = false\n"
	if err := os.WriteFile(filepath.Join(home, ".gitconfig"), []byte(gitconfig), 0o644); err != nil {
		return fmt.Errorf("write script gitconfig: %w", err)
	}
	for k, v := range map[string]string{
		"HOME":                home,
		"XDG_CONFIG_HOME":     filepath.Join(home, ".config"),
		"GIT_CONFIG_NOSYSTEM": "1",
		"GIT_CONFIG_GLOBAL":   filepath.Join(home, ".gitconfig"),
		"GIT_AUTHOR_NAME":     "Patch Author",
		"GIT_AUTHOR_EMAIL":    "author@example.com",
		"GIT_COMMITTER_NAME":  "Patch Author",
		"GIT_COMMITTER_EMAIL": "author@example.com",
		"GIT_AUTHOR_DATE":     fixedDate,
		"GIT_COMMITTER_DATE":  fixedDate,
		"GIT_PAGER":           "cat",
		"TZ":                  "UTC",
		"LC_ALL":              "C",
		"NO_COLOR":            "1",
	} {
		env.Setenv(k, v)
	}
	return nil
}

// cmdExits runs a program and asserts its exact exit status; stdout and stderr stay
// available to the stdout/stderr commands that follow, as after exec.
//
//	exits 3 mpspatch apply --tree up --patches patches
func cmdExits(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! exits (name the status you want instead)")
	}
	if len(args) < 2 {
		ts.Fatalf("usage: exits STATUS program [args...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exits: status %q is not a number", args[0])
	}
	err = ts.Exec(args[1], args[2:]...)
	have := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		have = ee.ExitCode()
	case err != nil:
		ts.Fatalf("exits: cannot run %s: %v", args[1], err)
	}
	if have != want {
		ts.Fatalf("%s exited with status %d, want %d", args[1], have, want)
	}
}

// cmdTreesum prints one line per entry below DIR (the .git directory left out, since git
// commands in a script refresh its index): kind and permission bits, size, and a content
// hash or link target. Two equal listings mean two byte-identical trees, so
//
//	treesum up
//	cp stdout before.sum
//	... something that must not write ...
//	treesum up
//	cmp stdout before.sum
//
// proves that nothing was written, created, deleted or chmod-ed.
func cmdTreesum(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: treesum DIR")
	}
	root := ts.MkAbs(args[0])
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		if rel == "." {
			return nil
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		mode := fi.Mode()
		switch {
		case mode&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			fmt.Fprintf(ts.Stdout(), "link %s -> %s\n", rel, target)
		case mode.IsDir():
			fmt.Fprintf(ts.Stdout(), "dir  %04o %s/\n", mode.Perm(), rel)
		case mode.IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(data)
			fmt.Fprintf(ts.Stdout(), "file %04o %6d %s %s\n", mode.Perm(), len(data), hex.EncodeToString(sum[:8]), rel)
		default:
			fmt.Fprintf(ts.Stdout(), "other %v %s\n", mode, rel)
		}
		return nil
	})
	if err != nil {
		ts.Fatalf("treesum %s: %v", args[0], err)
	}
}

// cmdValidJSON asserts that FILE ("stdout" for the last command's output) holds exactly
// one JSON value and nothing else: --json output must be machine-readable as a whole.
//
//	exec mpspatch status --json --tree up
//	validjson stdout
func cmdValidJSON(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: validjson FILE")
	}
	data := ts.ReadFile(args[0])
	dec := json.NewDecoder(strings.NewReader(data))
	var v any
	err := dec.Decode(&v)
	if err == nil && dec.More() {
		err = errors.New("more than one JSON value")
	}
	if err == nil {
		if _, terr := dec.Token(); !errors.Is(terr, io.EOF) {
			err = fmt.Errorf("trailing data after the JSON value: %v", terr)
		}
	}
	switch {
	case err != nil && !neg:
		ts.Fatalf("%s is not one JSON value: %v", args[0], err)
	case err == nil && neg:
		ts.Fatalf("%s is valid JSON, want it not to be", args[0])
	}
}

// cmdJSONError asserts that the last command's stdout ends with the --json error document
// of docs/exit-codes.md: one JSON object (or, with -lines, JSON Lines whose last line is
// the summary) holding "error": {"code": CODE, "name", "message", "details": {...}}.
//
//	exits 5 mpspatch probe --json
//	jsonerror 5
func cmdJSONError(ts *testscript.TestScript, neg bool, args []string) {
	lines := len(args) > 0 && args[0] == "-lines"
	if lines {
		args = args[1:]
	}
	if neg || len(args) != 1 {
		ts.Fatalf("usage: jsonerror [-lines] CODE")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("jsonerror: code %q is not a number", args[0])
	}
	data := ts.ReadFile("stdout")
	var doc struct {
		Type  string `json:"type"`
		Error *struct {
			Code    *int           `json:"code"`
			Name    string         `json:"name"`
			Message string         `json:"message"`
			Details map[string]any `json:"details"`
		} `json:"error"`
	}
	if lines {
		all := strings.Split(strings.TrimRight(data, "\n"), "\n")
		for i, l := range all {
			if !json.Valid([]byte(l)) {
				ts.Fatalf("stdout line %d is not JSON: %s", i+1, l)
			}
		}
		data = all[len(all)-1]
	} else {
		cmdValidJSON(ts, false, []string{"stdout"})
	}
	if err := json.Unmarshal([]byte(data), &doc); err != nil {
		ts.Fatalf("jsonerror: %v", err)
	}
	switch {
	case doc.Error == nil || doc.Error.Code == nil:
		ts.Fatalf("no error member with a code in:\n%s", data)
	case *doc.Error.Code != want:
		ts.Fatalf("error code %d, want %d", *doc.Error.Code, want)
	case doc.Error.Name == "" || doc.Error.Message == "" || doc.Error.Details == nil:
		ts.Fatalf("error member lacks name, message or details: %s", data)
	case lines && doc.Type != "summary":
		ts.Fatalf("the last line is a %q record, want the summary", doc.Type)
	}
}

// cmdWaitFile waits until FILE exists (a background command's way to say it is ready),
// failing after a minute.
//
//	waitfile ready
func cmdWaitFile(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: waitfile FILE")
	}
	path := ts.MkAbs(args[0])
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
	}
	ts.Fatalf("waitfile: %s did not appear within a minute", args[0])
}
