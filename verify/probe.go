package verify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os/exec"
	"strings"
	"time"

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

// Probe asks python which torch it loads (version, git hash, path, provenance stamp), which
// devices it has, and whether pytest is importable. device "" picks the best available
// (mps, then cuda, then cpu); a device that is named but absent is an ErrUnsupported error.
func Probe(ctx context.Context, python, target, device string) (Env, error) {
	return ProbeLogged(ctx, python, target, device, "")
}

// ProbeLogged is Probe writing the interpreter's whole output to logPath (none when ""),
// which a failure's one-paragraph message names.
func ProbeLogged(ctx context.Context, python, target, device, logPath string) (Env, error) {
	var stdout, stderr bytes.Buffer
	res, err := run.Run(ctx, run.Cmd{
		Argv:    []string{python, "-c", probeScript},
		Stdout:  &stdout,
		Stderr:  &stderr,
		LogPath: logPath,
		Timeout: 2 * time.Minute,
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
		if last != "" {
			msg += fmt.Sprintf("; it printed last: %s", last)
		}
		if logPath != "" {
			msg += "; full output in " + logPath
		}
		return Env{}, fmt.Errorf("%w: %s", ErrUnsupported, msg)
	}
	var p probeOutput
	if err := json.Unmarshal(lastLine(stdout.Bytes()), &p); err != nil {
		return Env{}, fmt.Errorf("probe of interpreter %q: unreadable answer %q: %w", python, lastLines(stdout.String(), 1), err)
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
