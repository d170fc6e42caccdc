package probe

import (
	"context"
	"io"
	"os"
	"testing"
	"time"
)

// BenchmarkStressFake measures the scheduler and checks themselves (the fake GPU costs
// almost nothing), so the numbers say how much of a Metal run is the probe's own overhead.
// It reports submissions per second and the ratio of 8-thread to 1-thread throughput.
func BenchmarkStressFake(b *testing.B) {
	rate := func(threads int) float64 {
		s := Scenario{Kind: KindStress, Threads: threads, Iterations: 200, Queues: QueuesPerThread, Words: DefaultWords}
		start := time.Now()
		if err := RunChild(context.Background(), NewFake(FakeFaults{}), s, NewEmitter(io.Discard)); err != nil {
			b.Fatal(err)
		}
		return float64(threads*s.Iterations) / time.Since(start).Seconds()
	}
	var one, eight float64
	for b.Loop() {
		one += rate(1)
		eight += rate(8)
	}
	b.ReportMetric(one/float64(b.N), "submissions/s@1")
	b.ReportMetric(eight/float64(b.N), "submissions/s@8")
	b.ReportMetric(eight/one, "scaling-8-vs-1")
}

// BenchmarkChildIsolation compares one scenario run in a child process (start, protocol,
// classification) with the same scenario in process: the price of surviving a crash.
func BenchmarkChildIsolation(b *testing.B) {
	s := Scenario{Kind: KindStress, Threads: 4, Iterations: 20, Queues: QueuesPerThread, Words: DefaultWords}
	r := &Runner{
		Argv: func(spec string) []string { return []string{os.Args[0], spec} },
		Env:  append(os.Environ(), childEnv+"=fake"),
	}
	var child, inProc time.Duration
	for b.Loop() {
		start := time.Now()
		if o := r.Run(context.Background(), s); !o.Pass {
			b.Fatalf("child: %s %s", o.Class, o.Detail)
		}
		child += time.Since(start)
		start = time.Now()
		if err := RunChild(context.Background(), NewFake(FakeFaults{}), s, NewEmitter(io.Discard)); err != nil {
			b.Fatal(err)
		}
		inProc += time.Since(start)
	}
	b.ReportMetric(float64(child.Milliseconds())/float64(b.N), "ms/child-run")
	b.ReportMetric(float64(child)/float64(inProc), "child-vs-in-process")
}
