package probe

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Kind says what a probe child does.
type Kind string

const (
	// KindInfo only reports the device.
	KindInfo Kind = "info"
	// KindStress runs the concurrent submission matrix cell and checks every buffer.
	KindStress Kind = "stress"
	// KindSharedCommandBuffer is a negative control: several threads encode into, add
	// handlers to and commit ONE command buffer. Metal must abort it.
	KindSharedCommandBuffer Kind = "control-shared-command-buffer"
	// KindHandlerAfterCommit is a negative control: a completed handler is added after
	// commit, the bug behind "Scheduled handler provided after commit call". Metal must
	// abort it.
	KindHandlerAfterCommit Kind = "control-handler-after-commit"
)

// IsControl says whether the kind is a negative control, which passes only when the child
// is aborted by a Metal assertion.
func (k Kind) IsControl() bool {
	return k == KindSharedCommandBuffer || k == KindHandlerAfterCommit
}

// QueueMode says whether each worker thread gets its own command queue or all share one.
type QueueMode string

const (
	QueuesPerThread QueueMode = "per-thread"
	QueuesShared    QueueMode = "shared"
)

// Limits on a scenario; a spec outside them is refused before anything starts.
const (
	maxThreads    = 256
	maxIterations = 1_000_000
	maxWords      = 1 << 22
	// DefaultWords is the length of each worker's buffer in 32-bit words.
	DefaultWords = 4096
)

// Scenario is one cell of the probe matrix, run in its own child process.
type Scenario struct {
	Kind       Kind      `json:"kind"`
	Threads    int       `json:"threads,omitempty"`
	Iterations int       `json:"iterations,omitempty"`
	Queues     QueueMode `json:"queues,omitempty"`
	// Words is the length of each worker's buffer.
	Words int `json:"words,omitempty"`
}

// Name is the scenario as a person reads it in a table.
func (s Scenario) Name() string {
	switch s.Kind {
	case KindInfo:
		return "device info"
	case KindStress:
		return fmt.Sprintf("%s x %s, %s queues", plural(s.Threads, "thread"), plural(s.Iterations, "iteration"), s.Queues)
	case KindSharedCommandBuffer:
		return fmt.Sprintf("control: %d threads share one command buffer", s.Threads)
	case KindHandlerAfterCommit:
		return "control: completed handler added after commit"
	}
	return string(s.Kind)
}

// spec encodes the scenario for the child's command line; ParseScenario reverses it.
func (s Scenario) spec() string {
	if s.Kind == KindInfo {
		return "kind=info"
	}
	parts := []string{"kind=" + string(s.Kind), "threads=" + strconv.Itoa(s.Threads),
		"iterations=" + strconv.Itoa(s.Iterations)}
	if s.Queues != "" {
		parts = append(parts, "queues="+string(s.Queues))
	}
	if s.Words != 0 {
		parts = append(parts, "words="+strconv.Itoa(s.Words))
	}
	return strings.Join(parts, ",")
}

// ParseScenario decodes a spec written by Scenario.spec: comma-separated key=value pairs
// with keys kind, threads, iterations, queues and words. Missing keys take defaults
// (per-thread queues, DefaultWords); the result is validated.
func ParseScenario(spec string) (Scenario, error) {
	var s Scenario
	seen := map[string]bool{}
	if strings.TrimSpace(spec) == "" {
		return s, fmt.Errorf("parse scenario: empty spec")
	}
	for _, part := range strings.Split(spec, ",") {
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			return s, fmt.Errorf("parse scenario %q: %q is not key=value", spec, part)
		}
		if seen[k] {
			return s, fmt.Errorf("parse scenario %q: key %q given twice", spec, k)
		}
		seen[k] = true
		var err error
		switch k {
		case "kind":
			s.Kind = Kind(v)
		case "threads":
			s.Threads, err = parseCount(v)
		case "iterations":
			s.Iterations, err = parseCount(v)
		case "words":
			s.Words, err = parseCount(v)
		case "queues":
			s.Queues = QueueMode(v)
		default:
			return s, fmt.Errorf("parse scenario %q: unknown key %q", spec, k)
		}
		if err != nil {
			return s, fmt.Errorf("parse scenario %q: %s: %w", spec, k, err)
		}
	}
	if s.Kind != KindInfo {
		if s.Queues == "" {
			s.Queues = QueuesPerThread
		}
		if s.Words == 0 {
			s.Words = DefaultWords
		}
	}
	if err := s.validate(); err != nil {
		return s, fmt.Errorf("parse scenario %q: %w", spec, err)
	}
	return s, nil
}

func parseCount(v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("want a whole number, have %q", v)
	}
	return n, nil
}

// validate checks that the scenario can be run.
func (s Scenario) validate() error {
	switch s.Kind {
	case KindInfo:
		if s.Threads != 0 || s.Iterations != 0 || s.Queues != "" || s.Words != 0 {
			return fmt.Errorf("kind info takes no other keys")
		}
		return nil
	case KindStress, KindSharedCommandBuffer, KindHandlerAfterCommit:
	default:
		return fmt.Errorf("unknown kind %q (want info, stress, %s or %s)", s.Kind, KindSharedCommandBuffer, KindHandlerAfterCommit)
	}
	if s.Threads < 1 || s.Threads > maxThreads {
		return fmt.Errorf("threads %d out of range 1..%d", s.Threads, maxThreads)
	}
	if s.Kind == KindSharedCommandBuffer && s.Threads < 2 {
		return fmt.Errorf("a shared command buffer needs at least 2 threads, have %d", s.Threads)
	}
	if s.Iterations < 1 || s.Iterations > maxIterations {
		return fmt.Errorf("iterations %d out of range 1..%d", s.Iterations, maxIterations)
	}
	if s.Queues != QueuesPerThread && s.Queues != QueuesShared {
		return fmt.Errorf("queues %q: want %q or %q", s.Queues, QueuesPerThread, QueuesShared)
	}
	if s.Words < 1 || s.Words > maxWords {
		return fmt.Errorf("words %d out of range 1..%d", s.Words, maxWords)
	}
	return nil
}

// Matrix lists the scenarios of one probe run: a stress cell per thread count (sorted,
// duplicates dropped), then, with controls, the two negative controls.
func Matrix(threads []int, iterations int, queues QueueMode, controls bool) ([]Scenario, error) {
	if len(threads) == 0 {
		return nil, fmt.Errorf("probe matrix: no thread counts")
	}
	ts := slices.Clone(threads)
	slices.Sort(ts)
	ts = slices.Compact(ts)
	var out []Scenario
	for _, t := range ts {
		s := Scenario{Kind: KindStress, Threads: t, Iterations: iterations, Queues: queues, Words: DefaultWords}
		if err := s.validate(); err != nil {
			return nil, fmt.Errorf("probe matrix: %w", err)
		}
		out = append(out, s)
	}
	if controls {
		out = append(out,
			Scenario{Kind: KindSharedCommandBuffer, Threads: 4, Iterations: 1, Queues: QueuesShared, Words: DefaultWords},
			Scenario{Kind: KindHandlerAfterCommit, Threads: 1, Iterations: 1, Queues: QueuesPerThread, Words: DefaultWords},
		)
	}
	return out, nil
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}
