package probe

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
)

// protocolVersion is the "v" of every child line. A parent refuses other versions.
const protocolVersion = 1

// Event types a child writes, one JSON object per line on stdout, in this order:
// hello, device, then for stress runs ready (per worker), go, iter (per worker and
// iteration), worker (per worker), and last result. error may come at any point.
const (
	EventHello  = "hello"
	EventDevice = "device"
	EventReady  = "ready"
	EventGo     = "go"
	EventIter   = "iter"
	EventWorker = "worker"
	EventResult = "result"
	EventError  = "error"
)

var eventTypes = map[string]bool{EventHello: true, EventDevice: true, EventReady: true,
	EventGo: true, EventIter: true, EventWorker: true, EventResult: true, EventError: true}

// Event is one line of the child protocol.
type Event struct {
	V    int    `json:"v"`
	Type string `json:"type"`
	// Scenario is the spec being run (hello).
	Scenario string `json:"scenario,omitempty"`
	// PID is the child's process id (hello).
	PID int `json:"pid,omitempty"`
	// Device is set on device events.
	Device *DeviceInfo `json:"device,omitempty"`
	// W and I are the worker and iteration of ready and iter events.
	W int `json:"w,omitempty"`
	I int `json:"i,omitempty"`
	// Worker is set on worker events.
	Worker *WorkerResult `json:"worker,omitempty"`
	// Result is set on result events.
	Result *Summary `json:"result,omitempty"`
	// Message is set on error events.
	Message string `json:"message,omitempty"`
}

// Summary is the child's final word on its scenario.
type Summary struct {
	OK        bool     `json:"ok"`
	ElapsedMS int64    `json:"elapsed_ms"`
	Failures  []string `json:"failures,omitempty"`
}

// errNotEvent marks a stdout line that is not a protocol line at all (for example
// something a framework printed); the parent keeps such lines as noise.
var errNotEvent = errors.New("not a probe event")

// parseLine decodes one protocol line. Surrounding white space is ignored. A line that does
// not start with '{' is errNotEvent; a JSON object of another version, of an unknown type,
// or without the payload its type needs is an error naming what is wrong.
func parseLine(line []byte) (Event, error) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' {
		return Event{}, errNotEvent
	}
	var e Event
	if err := json.Unmarshal(line, &e); err != nil {
		return Event{}, fmt.Errorf("parse probe line: %w", err)
	}
	if e.V != protocolVersion {
		return Event{}, fmt.Errorf("parse probe line: protocol version %d, want %d", e.V, protocolVersion)
	}
	if !eventTypes[e.Type] {
		return Event{}, fmt.Errorf("parse probe line: unknown event type %q", e.Type)
	}
	switch {
	case e.Type == EventDevice && e.Device == nil:
		return Event{}, fmt.Errorf("parse probe line: device event without device")
	case e.Type == EventWorker && e.Worker == nil:
		return Event{}, fmt.Errorf("parse probe line: worker event without worker")
	case e.Type == EventResult && e.Result == nil:
		return Event{}, fmt.Errorf("parse probe line: result event without result")
	case e.W < 0 || e.I < 0:
		return Event{}, fmt.Errorf("parse probe line: negative worker or iteration")
	}
	return e, nil
}

// Emitter writes events as JSON lines. It is safe for concurrent use: each event is one
// Write call, so lines from several worker threads never interleave, and nothing is
// buffered, so a crash loses at most the line being written.
type Emitter struct {
	mu  sync.Mutex
	w   io.Writer
	err error
}

// NewEmitter returns an Emitter writing to w.
func NewEmitter(w io.Writer) *Emitter { return &Emitter{w: w} }

// Emit writes e, filling in the protocol version. The first write error is kept and
// returned by Err; later events are dropped.
func (em *Emitter) Emit(e Event) {
	e.V = protocolVersion
	b, err := json.Marshal(e)
	if err != nil {
		// Every field of Event marshals; this would be a programming error.
		panic(fmt.Sprintf("probe: marshal event: %v", err))
	}
	b = append(b, '\n')
	em.mu.Lock()
	defer em.mu.Unlock()
	if em.err != nil {
		return
	}
	if _, err := em.w.Write(b); err != nil {
		em.err = fmt.Errorf("write probe event: %w", err)
	}
}

// Err is the first write error, if any.
func (em *Emitter) Err() error {
	em.mu.Lock()
	defer em.mu.Unlock()
	return em.err
}

// maxLine bounds one line kept from a child; longer lines are cut (their end is lost).
const maxLine = 64 << 10

// lineSplitter turns a stream of writes into lines. The last, unterminated line stays in
// partial until flush.
type lineSplitter struct {
	partial []byte
	cut     bool // partial exceeded maxLine; drop until the next newline
}

func (s *lineSplitter) write(p []byte, line func([]byte)) {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		if room := maxLine - len(s.partial); !s.cut && room > 0 {
			s.partial = append(s.partial, chunk[:min(room, len(chunk))]...)
			if len(chunk) > room {
				s.cut = true
			}
		} else if len(chunk) > 0 {
			s.cut = true
		}
		if i < 0 {
			return
		}
		line(s.partial)
		s.partial = s.partial[:0]
		s.cut = false
		p = p[i+1:]
	}
}

// EventLog collects a child's stdout as it arrives: protocol events, noise lines, and the
// torn last line of a child that died mid-write. It is an io.Writer for run.Cmd.Stdout.
type EventLog struct {
	mu     sync.Mutex
	split  lineSplitter
	events []Event
	noise  []string
	bad    []string
	torn   string
	// OnEvent, when set, sees each event as it is parsed (for progress).
	OnEvent func(Event)
}

const maxKeptLines = 50

// Write implements io.Writer; it never fails.
func (l *EventLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	var fresh []Event
	l.split.write(p, func(line []byte) {
		if e, ok := l.takeLine(line); ok {
			fresh = append(fresh, e)
		}
	})
	on := l.OnEvent
	l.mu.Unlock()
	if on != nil {
		for _, e := range fresh {
			on(e)
		}
	}
	return len(p), nil
}

func (l *EventLog) takeLine(line []byte) (Event, bool) {
	e, err := parseLine(line)
	switch {
	case err == nil:
		l.events = append(l.events, e)
		return e, true
	case errors.Is(err, errNotEvent):
		if len(bytes.TrimSpace(line)) > 0 && len(l.noise) < maxKeptLines {
			l.noise = append(l.noise, string(line))
		}
	default:
		if len(l.bad) < maxKeptLines {
			l.bad = append(l.bad, err.Error()+": "+string(line))
		}
	}
	return Event{}, false
}

// Close ends the stream: an unterminated last line is parsed if it is a whole event
// (a child may exit without the final newline) and kept as Torn otherwise.
func (l *EventLog) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	rest := bytes.TrimSpace(l.split.partial)
	l.split.partial = nil
	if len(rest) == 0 {
		return nil
	}
	if e, err := parseLine(rest); err == nil {
		l.events = append(l.events, e)
		return nil
	}
	l.torn = string(rest)
	return nil
}

// Events returns the events parsed so far.
func (l *EventLog) Events() []Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Event(nil), l.events...)
}

// Torn is the unterminated, unparsable last line, if the child died while writing it.
func (l *EventLog) Torn() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.torn
}

// Noise returns the non-protocol lines (at most 50) and the malformed protocol lines
// (at most 50, each with its parse error).
func (l *EventLog) Noise() (noise, malformed []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.noise...), append([]string(nil), l.bad...)
}
