package builder

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mpspatch/mpspatch/internal/run"
)

// torchProbe imports torch the way a user's script would (from a directory outside the
// tree, so the tree's torch/ is not found by accident of the working directory) and says
// where it came from. When a tree is named (argv[1]) and torch is not in it, it also
// names the installed distribution that owns the torch it found.
const torchProbe = `import json, os, sys
out = {}
try:
    import torch
except BaseException as e:
    out["error"] = "%s: %s" % (type(e).__name__, e)
else:
    f = os.path.realpath(getattr(torch, "__file__", None) or "")
    out["file"] = f
    out["git_version"] = str(getattr(getattr(torch, "version", None), "git_version", "") or "")
    tree = os.path.realpath(sys.argv[1]) + os.sep
    if not f.startswith(tree):
        try:
            import importlib.metadata as md
            for d in md.distributions():
                for p in d.files or []:
                    if str(p).replace(os.sep, "/") == "torch/__init__.py" and os.path.realpath(d.locate_file(p)) == f:
                        out["owner"] = d.metadata["Name"]
                        out["owner_version"] = d.version
                        break
                if "owner" in out:
                    break
        except Exception:
            pass
print(json.dumps(out))`

// TorchCheck is which torch the build's interpreter imports.
type TorchCheck struct {
	Python string `json:"python"`
	// File is torch/__init__.py as imported (symlinks resolved).
	File string `json:"file"`
	// GitVersion is torch.version.git_version ("" or "Unknown" when the build had no git).
	GitVersion string `json:"git_version"`
	// Owner names the installed distribution (a wheel, an older install) File belongs to,
	// when File is outside the tree; OwnerVersion is its version.
	Owner        string `json:"owner,omitempty"`
	OwnerVersion string `json:"owner_version,omitempty"`
}

// ShadowError says the interpreter imports a torch other than the one just built.
type ShadowError struct {
	Tree   string
	Head   string
	Check  TorchCheck
	Import string // the import error, when torch did not import at all
}

func (e *ShadowError) Error() string {
	py := e.Check.Python
	switch {
	case e.Import != "":
		return fmt.Sprintf("torch check: %s cannot import torch from outside the tree: %s", py, e.Import)
	case !InTree(e.Tree, e.Check.File):
		dir := filepath.Dir(e.Check.File)
		fix := fmt.Sprintf("remove it (rm -r %s) or take its directory off sys.path/PYTHONPATH", dir)
		if e.Check.Owner != "" {
			fix = fmt.Sprintf("remove it with `%s -m pip uninstall -y %s` (%s %s installed it)", py, e.Check.Owner, e.Check.Owner, e.Check.OwnerVersion)
		}
		return fmt.Sprintf("torch check: %s imports torch from %s, not from the tree %s: that install shadows the build; %s, then run mpspatch build again",
			py, dir, e.Tree, fix)
	default:
		return fmt.Sprintf("torch check: %s imports torch from the tree, but its git version %s is not the tree's HEAD %s: a stale build (torch/version.py or a stale extension); rebuild with mpspatch build --force",
			py, e.Check.GitVersion, e.Head)
	}
}

// checkTorch imports torch with python from outside tree and checks that it is the
// tree's build: torch/__init__.py inside the tree, and torch.version.git_version equal to
// head (when both are known). Anything else is a *ShadowError.
func checkTorch(ctx context.Context, python, tree, head string, env []string) (TorchCheck, error) {
	tc := TorchCheck{Python: python}
	dir, err := os.MkdirTemp("", "mpspatch-torch-check-")
	if err != nil {
		return tc, fmt.Errorf("torch check: %w", err)
	}
	defer os.RemoveAll(dir)
	out, err := run.Output(ctx, run.Cmd{Argv: []string{python, "-c", torchProbe, tree}, Dir: dir, Env: env, Timeout: 5 * time.Minute})
	if err != nil {
		return tc, fmt.Errorf("torch check: run %s: %w", python, err)
	}
	var doc struct {
		Error        string `json:"error"`
		File         string `json:"file"`
		GitVersion   string `json:"git_version"`
		Owner        string `json:"owner"`
		OwnerVersion string `json:"owner_version"`
	}
	if err := json.Unmarshal(lastLine(out), &doc); err != nil {
		return tc, fmt.Errorf("torch check: %s printed %q: %w", python, out, err)
	}
	tc.File, tc.GitVersion, tc.Owner, tc.OwnerVersion = doc.File, doc.GitVersion, doc.Owner, doc.OwnerVersion
	if doc.Error != "" {
		return tc, &ShadowError{Tree: tree, Head: head, Check: tc, Import: doc.Error}
	}
	if !InTree(tree, tc.File) {
		return tc, &ShadowError{Tree: tree, Head: head, Check: tc}
	}
	if head != "" && tc.GitVersion != "" && tc.GitVersion != "Unknown" && tc.GitVersion != head {
		return tc, &ShadowError{Tree: tree, Head: head, Check: tc}
	}
	return tc, nil
}

// InTree says whether file lies under tree, symlinks resolved on both sides.
func InTree(tree, file string) bool {
	if file == "" {
		return false
	}
	t := tree
	if r, err := filepath.EvalSymlinks(tree); err == nil {
		t = r
	}
	if r, err := filepath.EvalSymlinks(file); err == nil {
		file = r
	}
	rel, err := filepath.Rel(t, file)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

func lastLine(b []byte) []byte {
	s := strings.TrimSpace(string(b))
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return []byte(s)
}
