package probe

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseScenario(t *testing.T) {
	tests := []struct {
		spec    string
		want    Scenario
		wantErr string
	}{
		{spec: "kind=info", want: Scenario{Kind: KindInfo}},
		{spec: "kind=stress,threads=8,iterations=50,queues=shared,words=16",
			want: Scenario{Kind: KindStress, Threads: 8, Iterations: 50, Queues: QueuesShared, Words: 16}},
		{spec: "iterations=3,threads=2,kind=stress",
			want: Scenario{Kind: KindStress, Threads: 2, Iterations: 3, Queues: QueuesPerThread, Words: DefaultWords}},
		{spec: "kind=control-handler-after-commit,threads=1,iterations=1",
			want: Scenario{Kind: KindHandlerAfterCommit, Threads: 1, Iterations: 1, Queues: QueuesPerThread, Words: DefaultWords}},
		{spec: "", wantErr: "empty spec"},
		{spec: "kind=stress,threads=8", wantErr: "iterations 0 out of range"},
		{spec: "kind=stress,threads=0,iterations=1", wantErr: "threads 0 out of range"},
		{spec: "kind=stress,threads=257,iterations=1", wantErr: "threads 257 out of range"},
		{spec: "kind=stress,threads=x,iterations=1", wantErr: `threads: want a whole number, have "x"`},
		{spec: "kind=stress,threads=2,threads=3,iterations=1", wantErr: `key "threads" given twice`},
		{spec: "kind=stress,threads=2,iterations=1,colour=red", wantErr: `unknown key "colour"`},
		{spec: "kind=stress,threads=2,iterations=1,queues=pooled", wantErr: `queues "pooled"`},
		{spec: "kind=stress;threads=2", wantErr: "kind=stress;threads=2"},
		{spec: "kind=warp", wantErr: `unknown kind "warp"`},
		{spec: "kind=info,threads=2", wantErr: "kind info takes no other keys"},
		{spec: "kind=control-shared-command-buffer,threads=1,iterations=1", wantErr: "at least 2 threads"},
		{spec: "threads", wantErr: `"threads" is not key=value`},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			have, err := ParseScenario(tt.spec)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("have %v, want an error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || have != tt.want {
				t.Errorf("have %+v, %v; want %+v", have, err, tt.want)
			}
		})
	}
}

func TestMatrix(t *testing.T) {
	have, err := Matrix([]int{8, 1, 2, 8}, 10, QueuesShared, true)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range have {
		names = append(names, s.Name())
		back, err := ParseScenario(s.spec())
		if err != nil || back != s {
			t.Errorf("spec %q does not round-trip: %+v, %v", s.spec(), back, err)
		}
	}
	want := []string{
		"1 thread x 10 iterations, shared queues",
		"2 threads x 10 iterations, shared queues",
		"8 threads x 10 iterations, shared queues",
		"control: 4 threads share one command buffer",
		"control: completed handler added after commit",
	}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("have %q, want %q", names, want)
	}
	for _, bad := range []struct {
		threads []int
		iters   int
		want    string
	}{
		{nil, 10, "no thread counts"},
		{[]int{4, 0}, 10, "threads 0 out of range"},
		{[]int{4}, 0, "iterations 0 out of range"},
	} {
		if _, err := Matrix(bad.threads, bad.iters, QueuesPerThread, false); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("Matrix(%v, %d): have %v, want %q", bad.threads, bad.iters, err, bad.want)
		}
	}
}

func TestSlugsAreDistinctFileNames(t *testing.T) {
	ss, _ := Matrix([]int{1, 2, 4, 8, 16}, 50, QueuesPerThread, true)
	ss = append(ss, Scenario{Kind: KindInfo})
	seen := map[string]bool{}
	for _, s := range ss {
		slug := s.Slug()
		if seen[slug] || strings.ContainsAny(slug, "/=, ") {
			t.Errorf("slug %q repeated or not a plain file name", slug)
		}
		seen[slug] = true
	}
	if have := ss[3].Slug(); have != "stress-t8-i50-per-thread-w4096" {
		t.Errorf("have slug %q", have)
	}
}

// FuzzParseScenario: the child parses a spec from its command line. It must never panic,
// and an accepted spec must be valid and round-trip through spec.
func FuzzParseScenario(f *testing.F) {
	for _, s := range []string{"kind=info", "kind=stress,threads=8,iterations=50,queues=per-thread,words=4096",
		"kind=control-shared-command-buffer,threads=4,iterations=1,queues=shared", "kind=stress,threads=-1",
		",,,", "kind=info,kind=info", "words=99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		s, err := ParseScenario(spec)
		if err != nil {
			return
		}
		if err := s.validate(); err != nil {
			t.Fatalf("accepted %q but it is invalid: %v", spec, err)
		}
		back, err := ParseScenario(s.spec())
		if err != nil || back != s {
			t.Fatalf("%q -> %+v -> %q -> %+v, %v", spec, s, s.spec(), back, err)
		}
	})
}
