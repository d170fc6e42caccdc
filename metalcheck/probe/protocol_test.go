package probe

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParseLine(t *testing.T) {
	tests := []struct {
		name    string
		line    string
		want    Event
		wantErr string // substring; "not-event" means errNotEvent
	}{
		{name: "hello", line: `{"v":1,"type":"hello","scenario":"kind=info","pid":42}`,
			want: Event{V: 1, Type: EventHello, Scenario: "kind=info", PID: 42}},
		{name: "iter with spaces", line: "  {\"v\":1,\"type\":\"iter\",\"w\":3,\"i\":7}\r",
			want: Event{V: 1, Type: EventIter, W: 3, I: 7}},
		{name: "unknown field tolerated", line: `{"v":1,"type":"go","later":true}`,
			want: Event{V: 1, Type: EventGo}},
		{name: "result", line: `{"v":1,"type":"result","result":{"ok":false,"elapsed_ms":5,"failures":["x"]}}`,
			want: Event{V: 1, Type: EventResult, Result: &Summary{OK: false, ElapsedMS: 5, Failures: []string{"x"}}}},
		{name: "empty", line: "", wantErr: "not-event"},
		{name: "framework chatter", line: "2025-01-01 Metal API Validation Enabled", wantErr: "not-event"},
		{name: "torn", line: `{"v":1,"type":"wor`, wantErr: "unexpected end of JSON input"},
		{name: "other version", line: `{"v":2,"type":"go"}`, wantErr: "protocol version 2"},
		{name: "no version", line: `{"type":"go"}`, wantErr: "protocol version 0"},
		{name: "unknown type", line: `{"v":1,"type":"bogus"}`, wantErr: `unknown event type "bogus"`},
		{name: "device without payload", line: `{"v":1,"type":"device"}`, wantErr: "device event without device"},
		{name: "worker without payload", line: `{"v":1,"type":"worker"}`, wantErr: "worker event without worker"},
		{name: "result without payload", line: `{"v":1,"type":"result"}`, wantErr: "result event without result"},
		{name: "negative worker", line: `{"v":1,"type":"iter","w":-1}`, wantErr: "negative worker"},
		{name: "wrong type of field", line: `{"v":1,"type":"iter","w":"3"}`, wantErr: "cannot unmarshal"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			have, err := parseLine([]byte(tt.line))
			switch {
			case tt.wantErr == "not-event":
				if !errors.Is(err, errNotEvent) {
					t.Errorf("have %v, want errNotEvent", err)
				}
			case tt.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("have %v, want an error containing %q", err, tt.wantErr)
				}
			case err != nil:
				t.Errorf("have %v, want %+v", err, tt.want)
			case !reflect.DeepEqual(have, tt.want):
				t.Errorf("have %+v, want %+v", have, tt.want)
			}
		})
	}
}

func TestEventLogSplitsAndTolerates(t *testing.T) {
	stream := `{"v":1,"type":"hello","pid":7}` + "\n" +
		"objc[123]: Class X is implemented in both\n" +
		`{"v":9,"type":"go"}` + "\n" +
		"\n" +
		`{"v":1,"type":"go"}` + "\n" +
		`{"v":1,"type":"iter","w":1,"i":2}`
	tests := []struct {
		name  string
		chunk int // bytes per Write; 0 = all at once
		tail  string
		want  []string // event types
		torn  string
	}{
		{name: "whole, last line complete without newline", want: []string{"hello", "go", "iter"}},
		{name: "byte by byte", chunk: 1, want: []string{"hello", "go", "iter"}},
		{name: "torn last line", chunk: 7, tail: "\n" + `{"v":1,"type":"wo`, want: []string{"hello", "go", "iter"},
			torn: `{"v":1,"type":"wo`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var seen []string
			l := &EventLog{OnEvent: func(e Event) { seen = append(seen, e.Type) }}
			data := []byte(stream + tt.tail)
			step := tt.chunk
			if step == 0 {
				step = len(data)
			}
			for i := 0; i < len(data); i += step {
				if n, err := l.Write(data[i:min(i+step, len(data))]); err != nil || n != min(step, len(data)-i) {
					t.Fatalf("Write returned %d, %v", n, err)
				}
			}
			l.Close()
			var have []string
			for _, e := range l.Events() {
				have = append(have, e.Type)
			}
			if !reflect.DeepEqual(have, tt.want) {
				t.Errorf("have events %q, want %q", have, tt.want)
			}
			// OnEvent sees the complete lines as they arrive; an unterminated last
			// one is only parsed at Close.
			wantLive := tt.want
			if tt.tail == "" {
				wantLive = tt.want[:2]
			}
			if !reflect.DeepEqual(seen, wantLive) {
				t.Errorf("have live events %q, want %q", seen, wantLive)
			}
			if l.Torn() != tt.torn {
				t.Errorf("have torn %q, want %q", l.Torn(), tt.torn)
			}
			noise, bad := l.Noise()
			if len(noise) != 1 || !strings.HasPrefix(noise[0], "objc[123]") {
				t.Errorf("have noise %q", noise)
			}
			if len(bad) != 1 || !strings.Contains(bad[0], "protocol version 9") {
				t.Errorf("have malformed %q", bad)
			}
		})
	}
}

func TestEventLogCutsLongLines(t *testing.T) {
	l := &EventLog{}
	long := strings.Repeat("x", 3*maxLine)
	l.Write([]byte(long[:maxLine+5]))
	l.Write([]byte(long[maxLine+5:] + "\n" + `{"v":1,"type":"go"}` + "\n"))
	l.Close()
	noise, _ := l.Noise()
	if len(noise) != 1 || len(noise[0]) != maxLine {
		t.Errorf("have %d noise lines of %d bytes, want 1 of %d", len(noise), len(noise[0]), maxLine)
	}
	if len(l.Events()) != 1 {
		t.Errorf("have %d events after a long line, want 1", len(l.Events()))
	}
}

// FuzzParseLine feeds arbitrary child output to the parser: it must never panic, and
// what it accepts must survive a round trip through the Emitter's encoding.
func FuzzParseLine(f *testing.F) {
	for _, s := range []string{
		`{"v":1,"type":"hello","scenario":"kind=stress,threads=8,iterations=50","pid":42}`,
		`{"v":1,"type":"device","device":{"backend":"metal","name":"Apple M2","families":["apple8","metal3"]}}`,
		`{"v":1,"type":"worker","worker":{"worker":3,"iterations":5,"handlers":5,"mismatch":{"iteration":1,"index":2,"have":1,"want":2,"wrong":1,"written_by":{"worker":0,"iteration":1}}}}`,
		`{"v":1,"type":"result","result":{"ok":true,"elapsed_ms":12}}`,
		`{"v":1,"type":"wor`, `{}`, `{"v":1}`, "not json", "{\"v\":1,\"type\":\"iter\",\"w\":1e400}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		e, err := parseLine(line)
		if err != nil {
			return
		}
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatalf("accepted event does not marshal: %v", err)
		}
		again, err := parseLine(b)
		if err != nil {
			t.Fatalf("re-encoded event %s does not parse: %v", b, err)
		}
		if again.Type != e.Type || again.W != e.W || again.I != e.I {
			t.Fatalf("round trip changed the event: %+v -> %+v", e, again)
		}
		if bytes.ContainsRune(bytes.TrimSpace(line), '\n') {
			return // JSON may span lines; the protocol's lines may not
		}
		l := &EventLog{}
		l.Write(line)
		l.Close()
		if len(l.Events()) != 1 {
			t.Fatalf("EventLog did not take the line parseLine accepted")
		}
	})
}
