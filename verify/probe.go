package verify

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os/exec"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mpspatch/mpspatch/internal/run"
)

// ErrUnsupported marks an environment that cannot run the suites at all: no interpreter, no
// torch, no pytest. The cli maps it to exit 5.
var ErrUnsupported = errors.New("environment unsupported")

// probeScript prints one JSON object about the interpreter and its torch. It must run on any
// Python 3 and must not fail when torch or pytest are missing: it reports them instead.
const probeScript = `
import json, os, sys, platform
out = {"python": platform.python_version(), "executable": sys.executable,
       "platform": platform.platform()}
g = getattr(sys, "_is_gil_enabled", None)
out["gil"] = bool(g()) if g else True
try:
    import torch
except BaseException as e:
    out["torch_error"] = "%s: %s" % (type(e).__name__, e)
else:
    out["torch"] = str(torch.__version__)
    out["torch_git"] = str(getattr(getattr(torch, "version", None), "git_version", "") or "")
    out["torch_path"] = os.path.abspath(torch.__file__)
    stamp = os.path.join(os.path.dirname(os.path.abspath(torch.__file__)), "mpspatch_provenance.json")
    out["provenance"] = None
    if os.path.exists(stamp):
        try:
            with open(stamp) as f:
                out["provenance"] = json.load(f)
        except Exception as e:
            out["provenance"] = {"error": "unreadable %s: %s" % (stamp, e)}
    devs = []
    try:
        mps = getattr(torch.backends, "mps", None)
        if mps is not None and mps.is_available():
            devs.append("mps")
    except Exception:
        pass
    try:
        if torch.cuda.is_available():
            devs.append("cuda")
            out["cuda_name"] = torch.cuda.get_device_name(0)
    except Exception:
        pass
    devs.append("cpu")
    out["devices"] = devs
try:
    import pytest
    out["pytest"] = str(pytest.__version__)
except BaseException as e:
    out["pytest_error"] = "%s: %s" % (type(e).__name__, e)
sys.stdout.write(json.dumps(out) + "\n")
`

type probeOutput struct {
	Python      string          `json:"python"`
	Executable  string          `json:"executable"`
	Platform    string          `json:"platform"`
	GIL         *bool           `json:"gil"`
	Torch       string          `json:"torch"`
	TorchGit    string          `json:"torch_git"`
	TorchPath   string          `json:"torch_path"`
	TorchError  string          `json:"torch_error"`
	Provenance  json.RawMessage `json:"provenance"`
	Devices     []string        `json:"devices"`
	CUDAName    string          `json:"cuda_name"`
	Pytest      string          `json:"pytest"`
	PytestError string          `json:"pytest_error"`
}

// The probe's bounds. The interpreter is the user's (or whatever --python names): one
// that prints without end, never answers, or leaves a process holding its output must
// cost verify a bounded amount of memory and time, and end in an error that says which.
const (
	// defaultProbeTimeout is how long the interpreter has to answer: importing torch
	// takes seconds, a cold one on a network home directory a minute.
	defaultProbeTimeout = 2 * time.Minute
	// defaultProbeOutputLimit bounds what the interpreter may print, stdout and stderr
	// together: the answer is one line of JSON (a provenance stamp included, a few KiB),
	// and a failing import's traceback is a few KiB more.
	defaultProbeOutputLimit = 1 << 20
	// defaultProbeWaitDelay is how long the probe waits, once the interpreter has
	// exited, for a process it started to let go of its output.
	defaultProbeWaitDelay = 2 * time.Second
)

// probeOptions bound the probe; a zero field takes its default.
type probeOptions struct {
	// LogPath receives the interpreter's whole output (up to OutputLimit); none when "".
	LogPath     string
	Timeout     time.Duration
	OutputLimit int64
	WaitDelay   time.Duration
}

// probeWith asks python which torch it loads (version, git hash, path, provenance stamp),
// which devices it has, and whether pytest is importable. device "" picks the best
// available (mps, then cuda, then cpu); a device that is named but absent is an
// ErrUnsupported error, as is an interpreter that cannot answer.
func probeWith(ctx context.Context, python, target, device string, o probeOptions) (Env, error) {
	o.Timeout = cmp.Or(o.Timeout, defaultProbeTimeout)
	o.OutputLimit = cmp.Or(o.OutputLimit, defaultProbeOutputLimit)
	o.WaitDelay = cmp.Or(o.WaitDelay, defaultProbeWaitDelay)
	logPath := o.LogPath
	var stdout, stderr bytes.Buffer
	res, err := run.Run(ctx, run.Cmd{
		Argv:        []string{interpreterPath(python), "-c", probeScript},
		Stdout:      &stdout,
		Stderr:      &stderr,
		LogPath:     logPath,
		Timeout:     o.Timeout,
		OutputLimit: o.OutputLimit,
		WaitDelay:   o.WaitDelay,
		KillGrace:   time.Second,
	})
	if err != nil {
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
			return Env{}, fmt.Errorf("%w: python interpreter %q not found (set --python or [verify] python in mpspatch.toml): %w",
				ErrUnsupported, python, err)
		}
		if ctx.Err() != nil {
			return Env{}, ctx.Err()
		}
		// One paragraph: the interpreter, how it ended, the last thing it said, the log. Not
		// the probe script, which the log holds.
		last := lastLines(stderr.String(), 1)
		if last == "" {
			last = lastLines(stdout.String(), 1)
		}
		msg := fmt.Sprintf("interpreter %q failed the torch probe (%s)", python, res)
		switch {
		case res.OverLimit > 0:
			msg = fmt.Sprintf("interpreter %q printed more than %d KiB answering the torch probe, whose answer is one line of JSON; it was stopped (%s)",
				python, res.OverLimit>>10, res)
		case res.TimedOut:
			msg = fmt.Sprintf("interpreter %q did not answer the torch probe within %s; it was stopped (is it waiting for input, or hung importing torch?)",
				python, o.Timeout)
		}
		if last != "" {
			msg += fmt.Sprintf("; it printed last: %s", truncate(last, 200))
		}
		err := fmt.Errorf("%w: %s", ErrUnsupported, msg)
		if logPath != "" && stdout.Len()+stderr.Len() > 0 {
			// The log is worth keeping only when the interpreter said something.
			return Env{}, &ProbeError{Log: logPath, Err: fmt.Errorf("%w; full output in %s", err, logPath)}
		}
		return Env{}, err
	}
	// What answers is whatever --python named: a program that exits 0 without the probe's
	// JSON line is not a Python interpreter, an environment problem like a missing one.
	var p probeOutput
	answer := lastLine(stdout.Bytes())
	if len(answer) == 0 {
		return Env{}, fmt.Errorf("%w: %s is not a Python interpreter: the probe printed nothing", ErrUnsupported, python)
	}
	if err := json.Unmarshal(answer, &p); err != nil {
		err = fmt.Errorf("%w: %s is not a Python interpreter: the probe's answer is not its JSON line but %q (%v)",
			ErrUnsupported, python, truncate(lastLines(stdout.String(), 1), 200), err)
		if logPath == "" {
			return Env{}, err
		}
		return Env{}, &ProbeError{Log: logPath, Err: fmt.Errorf("%w; full output in %s", err, logPath)}
	}
	if p.TorchError != "" {
		return Env{}, fmt.Errorf("%w: interpreter %q (%s) cannot import torch: %s",
			ErrUnsupported, python, p.Executable, p.TorchError)
	}
	if p.PytestError != "" {
		return Env{}, fmt.Errorf("%w: interpreter %q (%s) cannot import pytest: %s (install it: %s -m pip install pytest)",
			ErrUnsupported, python, p.Executable, p.PytestError, python)
	}
	env := Env{
		Target: target, Interpreter: python, Executable: p.Executable, Python: p.Python,
		GIL: p.GIL, Torch: p.Torch, TorchGit: p.TorchGit, TorchPath: p.TorchPath,
		Pytest: p.Pytest, Devices: p.Devices, Platform: p.Platform, Provenance: p.Provenance,
	}
	if res.Orphaned {
		env.Warnings = append(env.Warnings, fmt.Sprintf("interpreter %q answered the torch probe and exited, but a process it started kept its output open; stopped waiting after %s",
			python, o.WaitDelay))
	}
	switch {
	case device == "" && len(p.Devices) > 0:
		env.Device = p.Devices[0]
	case device == "":
		env.Device = "cpu"
	case contains(p.Devices, device):
		env.Device = device
	default:
		return Env{}, fmt.Errorf("%w: device %q is not available to interpreter %q (torch %s has: %s)",
			ErrUnsupported, device, python, p.Torch, strings.Join(p.Devices, ", "))
	}
	if env.Device == "cuda" {
		env.DeviceName = p.CUDAName
	}
	return env, nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// truncate cuts s to at most n bytes (on a rune boundary), marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}

func lastLine(b []byte) []byte {
	b = bytes.TrimSpace(b)
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		return b[i+1:]
	}
	return b
}

// lastLines returns the last n non-empty lines of s, joined by " | ".
func lastLines(s string, n int) string {
	var keep []string
	lines := strings.Split(s, "\n")
	for i := len(lines) - 1; i >= 0 && len(keep) < n; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			keep = append([]string{l}, keep...)
		}
	}
	return strings.Join(keep, " | ")
}
