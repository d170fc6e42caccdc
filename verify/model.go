package verify

import (
	"encoding/json"
	"time"
)

// Targets: the torch under test, and the optional stock torch run beside it.
const (
	TargetPatched  = "patched"
	TargetBaseline = "baseline"
)

// Env is what is known about one interpreter and the torch it loads. The probe fills it
// before anything runs; the suites' env event adds the device name.
type Env struct {
	Target      string          `json:"target"`
	Interpreter string          `json:"interpreter"` // as given (--python, --baseline)
	Executable  string          `json:"executable"`  // sys.executable
	Python      string          `json:"python"`
	GIL         *bool           `json:"gil,omitempty"`
	Torch       string          `json:"torch"`
	TorchGit    string          `json:"torch_git"`
	TorchPath   string          `json:"torch_path"`
	Pytest      string          `json:"pytest"`
	Device      string          `json:"device"`
	DeviceName  string          `json:"device_name,omitempty"`
	Devices     []string        `json:"devices_available,omitempty"`
	Platform    string          `json:"platform,omitempty"`
	Provenance  json.RawMessage `json:"provenance,omitempty"`
	Warnings    []string        `json:"warnings,omitempty"`
}

// ProvenanceSummary is the part of the provenance stamp a report shows in one line. The
// stamp is written by `mpspatch build`; fields this version does not know are ignored.
func (e Env) ProvenanceSummary() string {
	if len(e.Provenance) == 0 || string(e.Provenance) == "null" {
		return "none (no mpspatch_provenance.json next to torch: not built by mpspatch)"
	}
	var m map[string]any
	if err := json.Unmarshal(e.Provenance, &m); err != nil {
		return "unreadable provenance stamp: " + err.Error()
	}
	b, _ := json.Marshal(m) // sorted keys: stable
	return string(b)
}

// Result is the outcome of one test in one repetition against one target.
type Result struct {
	Target     string   `json:"target"`
	ID         string   `json:"id"`   // pytest node id, or the file name for a file-level problem
	File       string   `json:"file"` // suite file
	Repeat     int      `json:"repeat"`
	Outcome    Outcome  `json:"outcome"`
	Duration   float64  `json:"duration"` // seconds
	Message    string   `json:"message,omitempty"`
	Death      string   `json:"death,omitempty"`      // how a crashed process ended: "SIGSEGV"
	Signatures []string `json:"signatures,omitempty"` // known messages found (see crashSignatures)
	Log        string   `json:"log,omitempty"`        // the process's log, relative to the report dir
}

// ScalingRow is one point of the scaling benchmark.
type ScalingRow struct {
	Target     string  `json:"target"`
	Model      string  `json:"model"`
	Mode       string  `json:"mode"` // threads or batched
	Threads    int     `json:"threads"`
	FPS        float64 `json:"fps"`
	Efficiency float64 `json:"efficiency"`
	HostMS     float64 `json:"host_ms"`
	DeviceMS   float64 `json:"device_ms"`
	Ceiling    float64 `json:"ceiling"`
	Label      string  `json:"label"`
	GIL        *bool   `json:"gil,omitempty"`
}

// BoundaryRow is the thread-boundary finder's answer for one op class: the largest thread
// count (up to Max) at which it passed.
type BoundaryRow struct {
	Target  string `json:"target"`
	Op      string `json:"op"`
	Threads int    `json:"threads"`
	Max     int    `json:"max"`
	Message string `json:"message,omitempty"` // the first failure above the boundary
}

// RunInfo is how verify was invoked, shown at the top of every report.
type RunInfo struct {
	Profile   string    `json:"profile"`
	Device    string    `json:"device"`
	Threads   []int     `json:"threads"`
	Repeat    int       `json:"repeat"`
	Timeout   string    `json:"timeout"`
	Suites    []string  `json:"suites,omitempty"`
	Scaling   bool      `json:"scaling"`
	StartedAt time.Time `json:"started_at"`
}

// events receives what the suites produce, as it happens: the report writer and the
// session's Observer (every Observer is one). Calls come from one goroutine.
type events interface {
	Env(Env)
	Started(target, id string)
	Result(Result)
	Scaling(ScalingRow)
	Boundary(BoundaryRow)
	// Notice reports runner decisions a reader should know about (a restart after a crash).
	Notice(target, msg string)
}

// observers fans every call out to each observer in order.
type observers []events

func (os observers) Env(e Env) {
	for _, o := range os {
		o.Env(e)
	}
}

func (os observers) Started(target, id string) {
	for _, o := range os {
		o.Started(target, id)
	}
}

func (os observers) Result(r Result) {
	for _, o := range os {
		o.Result(r)
	}
}

func (os observers) Scaling(s ScalingRow) {
	for _, o := range os {
		o.Scaling(s)
	}
}

func (os observers) Boundary(b BoundaryRow) {
	for _, o := range os {
		o.Boundary(b)
	}
}

func (os observers) Notice(target, msg string) {
	for _, o := range os {
		o.Notice(target, msg)
	}
}
