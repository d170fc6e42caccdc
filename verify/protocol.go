package verify

import (
	"bytes"
	"encoding/json"
	"errors"

	"github.com/mpspatch/mpspatch/internal/lazyregexp"
)

// suiteEvent is one JSON line a suite process appends to $MPSPATCH_EVENTS. One flat struct holds
// the fields of every event kind; a field that does not belong to the kind stays zero.
// Unknown fields are ignored, and so is a field of the wrong JSON type (the rest of the line
// is kept), because the suites and the runner are versioned apart.
type suiteEvent struct {
	Event string `json:"event"` // env, start, end, scaling, summary; others are ignored

	// start / end
	ID       string  `json:"id,omitempty"`
	Outcome  string  `json:"outcome,omitempty"`
	Duration float64 `json:"duration,omitempty"`
	Message  string  `json:"message,omitempty"`

	// env
	Python     string          `json:"python,omitempty"`
	GIL        *bool           `json:"gil,omitempty"`
	Torch      string          `json:"torch,omitempty"`
	TorchGit   string          `json:"torch_git,omitempty"`
	TorchPath  string          `json:"torch_path,omitempty"`
	Device     string          `json:"device,omitempty"`
	DeviceName string          `json:"device_name,omitempty"`
	Platform   string          `json:"platform,omitempty"`
	Provenance json.RawMessage `json:"provenance,omitempty"`

	// scaling
	Model      string  `json:"model,omitempty"`
	Threads    int     `json:"threads,omitempty"`
	FPS        float64 `json:"fps,omitempty"`
	Efficiency float64 `json:"efficiency,omitempty"`
	HostMS     float64 `json:"host_ms,omitempty"`
	DeviceMS   float64 `json:"device_ms,omitempty"`
	Label      string  `json:"label,omitempty"`
	Mode       string  `json:"mode,omitempty"`
	Ceiling    float64 `json:"ceiling,omitempty"`

	// boundary (the thread-boundary finder): Threads is the largest passing count
	Op  string `json:"op,omitempty"`
	Max int    `json:"max,omitempty"`

	// Raw is the whole line, kept for summary events whose fields are free-form.
	Raw json.RawMessage `json:"-"`
}

// nonFinite matches the bare NaN/Infinity tokens Python's json module writes by default and
// JSON does not allow. They are read as null (zero) rather than losing the whole line.
var nonFinite = lazyregexp.New(`([:\[,]\s*)-?(?:NaN|Infinity)\b`)

// parseEvent decodes one line. It fails only when the line is not a JSON object at all.
func parseEvent(line []byte) (suiteEvent, error) {
	line = bytes.TrimSpace(line)
	var ev suiteEvent
	err := json.Unmarshal(line, &ev)
	if err != nil && !isTypeError(err) {
		fixed := nonFinite().ReplaceAll(line, []byte("${1}null"))
		ev = suiteEvent{}
		err = json.Unmarshal(fixed, &ev)
		line = fixed
	}
	if err != nil && !isTypeError(err) {
		return suiteEvent{}, err
	}
	ev.Raw = append(json.RawMessage(nil), line...)
	return ev, nil
}

func isTypeError(err error) bool {
	var te *json.UnmarshalTypeError
	return errors.As(err, &te)
}

// eventReader turns the growing events file into events. Feed it what was appended since the
// last call; it keeps a partial last line until its newline arrives. Lines that do not parse
// are counted and skipped: a crash may tear the line being written.
type eventReader struct {
	pending []byte
	Bad     int // lines skipped as malformed
}

// Feed returns the events in the complete lines of pending+data.
func (r *eventReader) Feed(data []byte) []suiteEvent {
	r.pending = append(r.pending, data...)
	var out []suiteEvent
	for {
		i := bytes.IndexByte(r.pending, '\n')
		if i < 0 {
			break
		}
		line := r.pending[:i]
		r.pending = r.pending[i+1:]
		if ev, ok := r.parse(line); ok {
			out = append(out, ev)
		}
	}
	// Do not keep a reference to a large, mostly consumed buffer.
	r.pending = append([]byte(nil), r.pending...)
	return out
}

// Close parses a final line that lacks its newline; a torn line is dropped.
func (r *eventReader) Close() []suiteEvent {
	line := r.pending
	r.pending = nil
	if ev, ok := r.parse(line); ok {
		return []suiteEvent{ev}
	}
	return nil
}

func (r *eventReader) parse(line []byte) (suiteEvent, bool) {
	if len(bytes.TrimSpace(line)) == 0 {
		return suiteEvent{}, false
	}
	ev, err := parseEvent(line)
	if err != nil || ev.Event == "" {
		r.Bad++
		return suiteEvent{}, false
	}
	return ev, true
}

// parseEvents decodes a whole events file, skipping malformed lines (see eventReader).
func parseEvents(data []byte) []suiteEvent {
	var r eventReader
	evs := r.Feed(data)
	return append(evs, r.Close()...)
}
