package builder

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/mpspatch/mpspatch/internal/atomicfile"
)

// provenanceSchema is the version of the stamp's JSON layout. Readers refuse a newer one.
const provenanceSchema = 1

// ProvenanceFile is where the stamp lives, relative to the tree: inside the torch package,
// so `import torch; os.path.dirname(torch.__file__)` finds it from Python.
const ProvenanceFile = "torch/mpspatch_provenance.json"

// Provenance records what a build was made from. The verify suites read it to tell
// which series a torch carries.
type Provenance struct {
	Schema int `json:"schema"`
	// Tool is always "mpspatch"; ToolVersion is its version.
	Tool        string `json:"tool"`
	ToolVersion string `json:"mpspatch_version"`
	// UpstreamCommit is the tree's HEAD (the PyTorch commit patched); empty without .git.
	UpstreamCommit string `json:"upstream_commit"`
	// SeriesHash identifies the series (mpspatch version prints the same hash).
	SeriesHash string `json:"series_hash"`
	// Patches are the applied patch file names, in series order.
	Patches []string `json:"patches"`
	// BuiltAt is when the build finished (UTC, whole seconds); BuildSeconds how long it took.
	BuiltAt      time.Time `json:"built_at"`
	BuildSeconds float64   `json:"build_seconds"`
	// Python is the interpreter's sys.executable; PythonVersion its version.
	Python        string `json:"python"`
	PythonVersion string `json:"python_version"`
	// Platform is GOOS/GOARCH of the build machine; SDK the macOS SDK path on darwin.
	Platform string `json:"platform"`
	SDK      string `json:"sdk,omitempty"`
	// Env holds the variables mpspatch set for the build (USE_MPS, MAX_JOBS, [build] env, --env).
	Env map[string]string `json:"env"`
	// Log is the build log.
	Log string `json:"log"`
	// Inputs are what the up-to-date check compares; InputsHash their SHA-256. Absent
	// in stamps written before mpspatch checked whether a build was needed.
	Inputs     *Inputs `json:"inputs,omitempty"`
	InputsHash string  `json:"inputs_hash,omitempty"`
	// Cache is what the compiler cache did in this build (its own statistics).
	Cache *CacheStats `json:"cache,omitempty"`
}

// writeProvenance writes p to tree/ProvenanceFile atomically: a temporary file in the
// same directory, synced, then renamed over the old stamp, so a reader sees the old
// stamp or the new one and never half of one. It returns the stamp's path.
func writeProvenance(tree string, p Provenance) (string, error) {
	path := filepath.Join(tree, ProvenanceFile)
	data, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return "", fmt.Errorf("write provenance %s: %w", path, err)
	}
	data = append(data, '\n')
	if err := atomicfile.WriteBytes(path, data, atomicfile.Options{Sync: true}); err != nil {
		// atomicfile names the path already; say it once, as "write provenance PATH".
		return "", fmt.Errorf("write provenance %s: %w", path, errors.Unwrap(err))
	}
	return path, nil
}

// ErrNoProvenance says the tree has no stamp (it was not built by mpspatch).
var ErrNoProvenance = errors.New("no provenance stamp")

// ReadProvenance reads tree/ProvenanceFile.
func ReadProvenance(tree string) (Provenance, error) {
	path := filepath.Join(tree, ProvenanceFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return Provenance{}, fmt.Errorf("read provenance %s: %w", path, ErrNoProvenance)
	}
	if err != nil {
		return Provenance{}, fmt.Errorf("read provenance: %w", err)
	}
	return parseProvenance(path, data)
}

// parseProvenance decodes a stamp; name is used in errors.
func parseProvenance(name string, data []byte) (Provenance, error) {
	var p Provenance
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&p); err != nil {
		return Provenance{}, fmt.Errorf("read provenance %s: %w", name, err)
	}
	if p.Tool != "mpspatch" {
		return Provenance{}, fmt.Errorf("read provenance %s: tool is %q, want \"mpspatch\"", name, p.Tool)
	}
	if p.Schema < 1 || p.Schema > provenanceSchema {
		return Provenance{}, fmt.Errorf("read provenance %s: schema %d, this mpspatch reads 1..%d", name, p.Schema, provenanceSchema)
	}
	return p, nil
}
