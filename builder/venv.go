package builder

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/pelletier/go-toml/v2"

	"github.com/mpspatch/mpspatch/internal/atomicfile"
	"github.com/mpspatch/mpspatch/internal/lazyregexp"
	"github.com/mpspatch/mpspatch/internal/run"
)

// venvStamp, inside the virtual environment, holds the hash of the requirements last
// installed there, so an unchanged set is not handed to pip again.
const venvStamp = "mpspatch-requirements.sha256"

// RequirementError is a build requirement pip could not install.
type RequirementError struct {
	Requirement string
	Venv        string
	LogPath     string
	// Offline is set when pip's output says it could not reach an index.
	Offline bool
	Detail  string
}

func (e *RequirementError) Error() string {
	why := "pip found no distribution for it"
	if e.Offline {
		why = "pip could not reach a package index (offline?) and found no local copy"
	}
	msg := fmt.Sprintf("install build requirements into %s: requirement %q: %s", e.Venv, e.Requirement, why)
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	return msg + "; full output in " + e.LogPath
}

// requirements lists what the tree's build needs installed before
// `pip install --no-build-isolation`: pip's -r for requirements.txt, then each entry of
// pyproject.toml's [build-system] requires. It returns pip arguments and a hash of the
// whole set.
func requirements(tree string) ([]string, string, error) {
	h := sha256.New()
	var args []string
	if data, err := os.ReadFile(filepath.Join(tree, "requirements.txt")); err == nil {
		args = append(args, "-r", "requirements.txt")
		fmt.Fprintf(h, "requirements.txt\n%s\n", data)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, "", fmt.Errorf("build requirements: %w", err)
	}
	pyproject := filepath.Join(tree, "pyproject.toml")
	if data, err := os.ReadFile(pyproject); err == nil {
		var doc struct {
			BuildSystem struct {
				Requires []string `toml:"requires"`
			} `toml:"build-system"`
		}
		if err := toml.Unmarshal(data, &doc); err != nil {
			var de *toml.DecodeError
			if errors.As(err, &de) {
				row, col := de.Position()
				return nil, "", fmt.Errorf("build requirements: %s:%d:%d: %v", pyproject, row, col, err)
			}
			return nil, "", fmt.Errorf("build requirements: %s: %w", pyproject, err)
		}
		for _, r := range doc.BuildSystem.Requires {
			args = append(args, r)
			fmt.Fprintf(h, "requires %s\n", r)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, "", fmt.Errorf("build requirements: %w", err)
	}
	return args, hex.EncodeToString(h.Sum(nil)), nil
}

// venvPython is the interpreter of the virtual environment dir.
func venvPython(dir string) string { return filepath.Join(dir, "bin", "python") }

// ensureVenv makes opts.Venv usable: creates it with opts.Python (`python -m venv`) when
// it has no interpreter, and installs the tree's requirements when they changed since
// the last install there. It returns what it did ("created", "requirements installed").
func ensureVenv(ctx context.Context, opts Options, logDir string) ([]string, error) {
	dir := opts.Venv
	py := venvPython(dir)
	var did []string
	env := buildEnv(opts)
	rep := opts.Reporter
	if rep == nil {
		rep = reporterFunc(func(Event) {})
	}
	started := opts.now()
	if !isExecutable(py) {
		rep.Report(Event{Phase: PhaseVenv, Percent: -1, Line: "creating " + dir})
		if _, err := run.Output(ctx, run.Cmd{Argv: []string{opts.python(), "-m", "venv", dir}, Env: env, Timeout: 10 * time.Minute}); err != nil {
			if ctx.Err() != nil {
				return did, fmt.Errorf("create virtual environment %s: %w", dir, ctx.Err())
			}
			hint := ""
			if strings.Contains(err.Error(), "ensurepip") {
				hint = " (Debian/Ubuntu: apt install python3-venv)"
			}
			return did, &EnvError{What: "venv", Err: fmt.Errorf("create virtual environment %s with %s%s: %w", dir, opts.python(), hint, err)}
		}
		did = append(did, "created "+dir)
	}
	args, hash, err := requirements(opts.Tree)
	if err != nil {
		return did, err
	}
	stamp := filepath.Join(dir, venvStamp)
	if old, err := os.ReadFile(stamp); err == nil && strings.TrimSpace(string(old)) == hash {
		return did, nil
	}
	if len(args) == 0 {
		return did, nil
	}
	log := logPath(logDir, "requirements", started)
	argv := append([]string{py, "-m", "pip", "install"}, args...)
	var mu sync.Mutex
	var lines []string
	n := 0
	onLine := func(l string) {
		l = strings.TrimSpace(stripANSI(l))
		mu.Lock()
		defer mu.Unlock()
		if len(lines) < 400 {
			lines = append(lines, l)
		}
		if strings.HasPrefix(l, "Collecting ") || strings.HasPrefix(l, "Requirement already satisfied:") {
			n++
			rep.Report(Event{Phase: PhaseRequirements, Done: n, Percent: -1, Elapsed: opts.now().Sub(started), Line: l})
		} else if strings.HasPrefix(l, "Installing collected packages") || strings.HasPrefix(l, "Successfully installed") {
			rep.Report(Event{Phase: PhaseRequirements, Done: n, Percent: -1, Elapsed: opts.now().Sub(started), Line: l})
		}
	}
	outW, errW := &lineWriter{fn: onLine}, &lineWriter{fn: onLine}
	_, err = run.Run(ctx, run.Cmd{Argv: argv, Dir: opts.Tree, Env: env, Stdout: outW, Stderr: errW, LogPath: log})
	outW.flush()
	errW.flush()
	if err != nil {
		if ctx.Err() != nil {
			return did, fmt.Errorf("install build requirements (log: %s): %w", log, ctx.Err())
		}
		return did, requirementError(dir, log, lines, envValue(env, "PIP_NO_INDEX") != "", err)
	}
	if err := atomicfile.WriteBytes(stamp, []byte(hash+"\n"), atomicfile.Options{}); err != nil {
		return did, fmt.Errorf("install build requirements: %w", err)
	}
	return append(did, fmt.Sprintf("installed build requirements (%s)", strings.Join(args, " "))), nil
}

var (
	noMatchRE   = lazyregexp.New(`No matching distribution found for (\S+)`)
	noVersionRE = lazyregexp.New(`Could not find a version that satisfies the requirement (\S+)`)
	offlineRE   = lazyregexp.New(`(?i)(NewConnectionError|Network is unreachable|Temporary failure in name resolution|Failed to establish a new connection)`)
)

// requirementError names the requirement pip failed on, from its output.
func requirementError(venv, log string, lines []string, noIndex bool, err error) error {
	req, detail := "", ""
	offline := noIndex
	for _, l := range lines {
		if m := noMatchRE().FindStringSubmatch(l); m != nil && req == "" {
			req, detail = m[1], l
		}
		if m := noVersionRE().FindStringSubmatch(l); m != nil && req == "" {
			req, detail = m[1], l
		}
		if offlineRE().MatchString(l) {
			offline = true
		}
	}
	if req == "" {
		return &EnvError{What: "requirements", Err: fmt.Errorf("install build requirements into %s: %w (full output in %s)", venv, err, log)}
	}
	return &EnvError{What: "requirements", Err: &RequirementError{Requirement: req, Venv: venv, LogPath: log, Offline: offline, Detail: strings.TrimPrefix(detail, "ERROR: ")}}
}
