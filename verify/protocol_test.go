package verify

import (
	"bytes"
	"testing"
)

func TestParseEvents(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      string
		want    []string // event:id of each event parsed
		wantBad int
	}{
		{"start and end", `{"event":"start","id":"a"}` + "\n" + `{"event":"end","id":"a","outcome":"pass","duration":1.5}` + "\n",
			[]string{"start:a", "end:a"}, 0},
		{"torn last line from a crash", `{"event":"start","id":"a"}` + "\n" + `{"event":"end","id":"a","outc`,
			[]string{"start:a"}, 1},
		{"complete last line without newline", `{"event":"start","id":"a"}`,
			[]string{"start:a"}, 0},
		{"unknown events and fields kept", `{"event":"progress","pct":5,"extra":{"x":1}}` + "\n",
			[]string{"progress:"}, 0},
		{"wrong field type keeps the rest", `{"event":"end","id":"b","duration":"fast","outcome":"pass"}` + "\n",
			[]string{"end:b"}, 0},
		{"python NaN and Infinity", `{"event":"scaling","model":"m","fps":NaN,"ceiling":Infinity,"threads":2}` + "\n",
			[]string{"scaling:"}, 0},
		{"garbage and blank lines", "not json\n\n[1,2]\n{}\n" + `{"event":"start","id":"c"}` + "\n",
			[]string{"start:c"}, 3},
		{"CRLF", `{"event":"start","id":"d"}` + "\r\n",
			[]string{"start:d"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r eventReader
			evs := append(r.Feed([]byte(tc.in)), r.Close()...)
			var have []string
			for _, e := range evs {
				have = append(have, e.Event+":"+e.ID)
			}
			if len(have) != len(tc.want) {
				t.Fatalf("have %v, want %v", have, tc.want)
			}
			for i := range have {
				if have[i] != tc.want[i] {
					t.Errorf("event %d: have %s, want %s", i, have[i], tc.want[i])
				}
			}
			if r.Bad != tc.wantBad {
				t.Errorf("bad lines: have %d, want %d", r.Bad, tc.wantBad)
			}
		})
	}
}

// The events file is read while it is written: a line split across reads must come out whole.
func TestEventReaderSplitsAnywhere(t *testing.T) {
	in := []byte(`{"event":"env","python":"3.11.2","gil":true,"torch":"1.13"}` + "\n" +
		`{"event":"start","id":"t.py::x[t4]"}` + "\n" +
		`{"event":"end","id":"t.py::x[t4]","outcome":"fail","duration":0.25,"message":"bad"}` + "\n")
	for cut := 0; cut <= len(in); cut++ {
		var r eventReader
		evs := append(r.Feed(in[:cut]), r.Feed(in[cut:])...)
		evs = append(evs, r.Close()...)
		if len(evs) != 3 || r.Bad != 0 {
			t.Fatalf("cut at %d: have %d events, %d bad", cut, len(evs), r.Bad)
		}
		if evs[2].Outcome != "fail" || evs[2].Duration != 0.25 || evs[2].Message != "bad" || *evs[0].GIL != true {
			t.Fatalf("cut at %d: fields lost: %+v", cut, evs)
		}
	}
}

func TestParseEventFields(t *testing.T) {
	ev, err := parseEvent([]byte(`{"event":"scaling","model":"mlp-small","threads":4,"fps":1234.5,"efficiency":0.8,"host_ms":0.5,"device_ms":0.2,"label":"host-bound","mode":"threads","ceiling":2.5,"gil":false}`))
	if err != nil {
		t.Fatal(err)
	}
	if ev.Model != "mlp-small" || ev.Threads != 4 || ev.FPS != 1234.5 || ev.Efficiency != 0.8 ||
		ev.HostMS != 0.5 || ev.DeviceMS != 0.2 || ev.Label != "host-bound" || ev.Mode != "threads" ||
		ev.Ceiling != 2.5 || ev.GIL == nil || *ev.GIL {
		t.Errorf("fields: %+v", ev)
	}
}

// FuzzEventReader feeds arbitrary bytes, split at an arbitrary point, as a crashing suite
// might leave them: the reader must never panic and must agree with a one-shot parse.
func FuzzEventReader(f *testing.F) {
	for _, s := range []string{
		`{"event":"start","id":"a"}` + "\n",
		`{"event":"end","id":"a","outcome":"pass","duration":1}` + "\n" + `{"event":"end","id":"b","outc`,
		`{"event":"scaling","fps":NaN,"ceiling":-Infinity}` + "\n",
		`{"event":"env","provenance":{"series":["0001"]},"gil":null}`,
		"\n\n\x00\xff{",
		`{"event":1,"id":[]}` + "\n",
	} {
		f.Add([]byte(s), uint8(3))
	}
	f.Fuzz(func(t *testing.T, data []byte, cut uint8) {
		whole := parseEvents(data)
		c := int(cut)
		if c > len(data) {
			c = len(data)
		}
		var r eventReader
		split := append(r.Feed(data[:c]), r.Feed(data[c:])...)
		split = append(split, r.Close()...)
		if len(whole) != len(split) {
			t.Fatalf("one-shot %d events, split at %d gives %d", len(whole), c, len(split))
		}
		for i := range whole {
			if !bytes.Equal(whole[i].Raw, split[i].Raw) {
				t.Fatalf("event %d differs: %s vs %s", i, whole[i].Raw, split[i].Raw)
			}
		}
	})
}
