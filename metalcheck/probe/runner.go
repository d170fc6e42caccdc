package probe

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mpspatch/mpspatch/internal/run"
)

// Runner runs scenarios, each in a child process, so that a crash inside Metal is a
// classified outcome rather than the end of mpspatch.
type Runner struct {
	// Argv returns the child's command line for a scenario spec (Scenario.spec). The child
	// must run RunChild for that spec and write its events on stdout.
	Argv func(spec string) []string
	// Env is the child's whole environment; nil means this process's environment plus
	// MTL_DEBUG_LAYER=1 (Metal API validation, which turns misuse into assertions).
	Env []string
	// Timeout bounds one child; zero means only ctx does.
	Timeout time.Duration
	// KillGrace is how long a timed-out child's group has between SIGTERM and SIGKILL.
	KillGrace time.Duration
	// LogDir, when set, receives one log per child with its command line, stdout and stderr.
	LogDir string
	// OnEvent, when set, sees each child event as it arrives (from another goroutine).
	OnEvent func(s Scenario, e Event)
}

// Outcome is the verdict on one scenario.
type Outcome struct {
	Scenario Scenario `json:"scenario"`
	Name     string   `json:"name"`
	Class    Class    `json:"class"`
	// Pass applies the scenario's rule to Class (see passes).
	Pass     bool   `json:"pass"`
	Detail   string `json:"detail,omitempty"`
	ExitCode int    `json:"exit_code"`
	// Signal is the crash signal: as the Go runtime reported it, else the one that
	// killed the process.
	Signal    string         `json:"signal,omitempty"`
	TimedOut  bool           `json:"timed_out,omitempty"`
	ElapsedMS int64          `json:"elapsed_ms"`
	Device    *DeviceInfo    `json:"device,omitempty"`
	Progress  Progress       `json:"progress"`
	Workers   []WorkerResult `json:"workers,omitempty"`
	Failures  []string       `json:"failures,omitempty"`
	Stderr    StderrSigns    `json:"stderr_signs"`
	// StderrTail is the end of the child's stderr, for failed outcomes.
	StderrTail []string `json:"stderr_tail,omitempty"`
	// TornLine is the child's last stdout line when it died while writing it.
	TornLine string `json:"torn_line,omitempty"`
	// Noise holds stdout lines that were not protocol events, and malformed ones.
	Noise []string `json:"stdout_noise,omitempty"`
	Log   string   `json:"log,omitempty"`
}

// defaultEnv is the child environment Runner uses when Env is nil.
func defaultEnv() []string {
	return append(os.Environ(), "MTL_DEBUG_LAYER=1")
}

// Run runs one scenario in a child and classifies how it ended. It never returns an
// error: failing to start the child is an outcome of class error. Cancelling ctx kills
// the child's process group.
func (r *Runner) Run(ctx context.Context, s Scenario) Outcome {
	out := Outcome{Scenario: s, Name: s.Name()}
	if r.Argv == nil {
		out.Class, out.Detail = ClassError, "probe runner: no child command line"
		return out
	}
	env := r.Env
	if env == nil {
		env = defaultEnv()
	}
	events := &EventLog{}
	if r.OnEvent != nil {
		events.OnEvent = func(e Event) { r.OnEvent(s, e) }
	}
	stderr := &stderrLog{}
	cmd := run.Cmd{
		Argv:      r.Argv(s.spec()),
		Env:       env,
		Stdout:    events,
		Stderr:    stderr,
		KillGrace: r.KillGrace,
	}
	// The time limit is a context deadline rather than run.Cmd.Timeout: the kill of the
	// process group is the same, and run's TimedOut flag is written by its watcher
	// goroutine without synchronisation (the race detector reports it).
	runCtx := ctx
	if r.Timeout > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeout(ctx, r.Timeout)
		defer cancel()
	}
	if r.LogDir != "" {
		cmd.LogPath = filepath.Join(r.LogDir, s.Slug()+".log")
		out.Log = cmd.LogPath
	}
	res, err := run.Run(runCtx, cmd)
	events.Close()
	stderr.Close()
	if err != nil && ctx.Err() == nil && errors.Is(runCtx.Err(), context.DeadlineExceeded) {
		res.TimedOut = true
	}
	var exitErr *run.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		out.Class, out.Detail = ClassError, fmt.Sprintf("start probe child: %v", err)
		out.ExitCode = -1
		return out
	}

	ev := evidence{
		Kind: s.Kind, ExitCode: res.ExitCode, Signal: res.Signal, TimedOut: res.TimedOut,
		Timeout: r.Timeout, Events: events.Events(), Torn: events.Torn(), Stderr: stderr.Signs(),
	}
	out.Class, out.Detail = classify(ev)
	out.Pass = passes(s.Kind, out.Class)
	out.ExitCode = res.ExitCode
	switch {
	case ev.Stderr.Signal != "":
		out.Signal = ev.Stderr.Signal
	case res.Signal != 0:
		out.Signal = signalName(res.Signal)
	}
	out.TimedOut = res.TimedOut
	out.ElapsedMS = res.Duration.Milliseconds()
	out.Progress = ProgressOf(ev.Events)
	out.Stderr = ev.Stderr
	out.TornLine = ev.Torn
	for _, e := range ev.Events {
		switch {
		case e.Type == EventDevice && out.Device == nil:
			out.Device = e.Device
		case e.Type == EventWorker:
			out.Workers = append(out.Workers, *e.Worker)
		}
	}
	if out.Progress.Result != nil {
		out.Failures = out.Progress.Result.Failures
	}
	noise, bad := events.Noise()
	out.Noise = append(noise, bad...)
	if !out.Pass || (s.Kind.IsControl() && out.Class != ClassOK) {
		out.StderrTail = stderr.Tail()
	}
	return out
}

// Report is a whole probe run.
type Report struct {
	// Device is the GPU the children reported (from the first that did).
	Device   *DeviceInfo `json:"device,omitempty"`
	Outcomes []Outcome   `json:"outcomes"`
	Passed   int         `json:"passed"`
	Failed   int         `json:"failed"`
	// Pass is true when every outcome passed.
	Pass bool `json:"pass"`
	// LogDir holds the per-child logs.
	LogDir string `json:"log_dir,omitempty"`
}

// runAll runs the scenarios one after another. It stops early only when ctx is done.
func (r *Runner) runAll(ctx context.Context, scenarios []Scenario) Report {
	rep := Report{LogDir: r.LogDir}
	for _, s := range scenarios {
		if ctx.Err() != nil {
			break
		}
		rep.Add(r.Run(ctx, s))
	}
	return rep
}

// Add appends an outcome and updates the totals.
func (rep *Report) Add(o Outcome) {
	rep.Outcomes = append(rep.Outcomes, o)
	if rep.Device == nil && o.Device != nil {
		rep.Device = o.Device
	}
	if o.Pass {
		rep.Passed++
	} else {
		rep.Failed++
	}
	rep.Pass = rep.Failed == 0
}

// Slug is a file-name-safe form of the scenario.
func (s Scenario) Slug() string {
	r := strings.NewReplacer("=", "", ",", "-", "kind", "", "threads", "t", "iterations", "i", "queues", "", "words", "w")
	return strings.Trim(r.Replace(s.spec()), "-")
}
