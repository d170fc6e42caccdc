package builder

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// PatchRef is one applied patch and the SHA-256 of its file.
type PatchRef struct {
	Name   string `json:"name"`
	SHA256 string `json:"sha256"`
}

// Inputs are what a build's result depends on, as far as mpspatch can tell without
// reading the tree: when they equal the last build's, the build is up to date.
type Inputs struct {
	UpstreamCommit string     `json:"upstream_commit"`
	SeriesHash     string     `json:"series_hash"`
	Patches        []PatchRef `json:"patches"`
	Python         string     `json:"python"`
	PythonVersion  string     `json:"python_version"`
	Args           []string   `json:"args"`
	// Env holds the variables mpspatch sets (but MAX_JOBS, which changes how fast, not
	// what) and the inherited ones PyTorch's build reads (see buildRelevant).
	Env      map[string]string `json:"env"`
	Launcher string            `json:"launcher"`
	Platform string            `json:"platform"`
	SDK      string            `json:"sdk,omitempty"`
}

// hash is the SHA-256 of the inputs' JSON (map keys sorted by encoding/json).
func (in Inputs) hash() string {
	data, _ := json.Marshal(in)
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// buildRelevant says whether an inherited environment variable changes what PyTorch's
// build produces: setup.py and tools/setup_helpers read USE_*, BUILD_*, CMAKE_* (passed to
// cmake as -D), TORCH_* and the usual compiler variables.
func buildRelevant(name string) bool {
	for _, p := range []string{"USE_", "BUILD_", "CMAKE_", "TORCH_", "PYTORCH_"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	switch name {
	case "CC", "CXX", "CFLAGS", "CXXFLAGS", "LDFLAGS", "CPPFLAGS", "DEBUG", "REL_WITH_DEB_INFO",
		"MACOSX_DEPLOYMENT_TARGET", "SDKROOT", "DEVELOPER_DIR":
		return true
	}
	return false
}

// changes lists, for people, how cur differs from old; nil when they are equal.
func (old Inputs) changes(cur Inputs) []string {
	var out []string
	short := func(s string) string {
		if len(s) > 12 {
			return s[:12]
		}
		if s == "" {
			return "(none)"
		}
		return s
	}
	if old.UpstreamCommit != cur.UpstreamCommit {
		out = append(out, fmt.Sprintf("upstream commit %s -> %s", short(old.UpstreamCommit), short(cur.UpstreamCommit)))
	}
	oldP := map[string]string{}
	for _, p := range old.Patches {
		oldP[p.Name] = p.SHA256
	}
	curP := map[string]bool{}
	for _, p := range cur.Patches {
		curP[p.Name] = true
		switch h, ok := oldP[p.Name]; {
		case !ok:
			out = append(out, "patch "+p.Name+" added")
		case h != p.SHA256:
			out = append(out, "patch "+p.Name+" changed")
		}
	}
	for _, p := range old.Patches {
		if !curP[p.Name] {
			out = append(out, "patch "+p.Name+" removed")
		}
	}
	if old.SeriesHash != cur.SeriesHash && len(out) == 0 {
		out = append(out, fmt.Sprintf("series hash %s -> %s", short(old.SeriesHash), short(cur.SeriesHash)))
	}
	if old.Python != cur.Python || old.PythonVersion != cur.PythonVersion {
		out = append(out, fmt.Sprintf("python %s %s -> %s %s", old.Python, old.PythonVersion, cur.Python, cur.PythonVersion))
	}
	if !slices.Equal(old.Args, cur.Args) {
		out = append(out, fmt.Sprintf("build arguments %q -> %q", old.Args, cur.Args))
	}
	keys := map[string]bool{}
	for k := range old.Env {
		keys[k] = true
	}
	for k := range cur.Env {
		keys[k] = true
	}
	var names []string
	for k := range keys {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		o, hadO := old.Env[k]
		c, hasC := cur.Env[k]
		switch {
		case !hadO:
			out = append(out, fmt.Sprintf("env %s=%s set", k, c))
		case !hasC:
			out = append(out, fmt.Sprintf("env %s unset (was %s)", k, o))
		case o != c:
			out = append(out, fmt.Sprintf("env %s %s -> %s", k, o, c))
		}
	}
	if old.Launcher != cur.Launcher {
		out = append(out, fmt.Sprintf("compiler launcher %s -> %s", orNone(old.Launcher), orNone(cur.Launcher)))
	}
	if old.Platform != cur.Platform || old.SDK != cur.SDK {
		out = append(out, fmt.Sprintf("platform %s %s -> %s %s", old.Platform, old.SDK, cur.Platform, cur.SDK))
	}
	if len(out) == 0 && old.hash() != cur.hash() {
		out = append(out, "build inputs changed")
	}
	return out
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
