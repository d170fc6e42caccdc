package streammodel

import (
	"testing"
)

// SPEC item 6: T frees x while its GPU read of x is pending; S gets x from T's free list
// only once T's work on it completed. In every schedule T's read sees T's value; in some
// S does get x (the rule reuses memory across streams, it does not just refuse to).
func TestHeapReusesAcrossStreamsOnlyAfterCompletion(t *testing.T) {
	for _, cfg := range []HeapConfig{{}, {Trim: true}, {Adversarial: true}, {Trim: true, Adversarial: true}} {
		bound := 1
		if cfg.Adversarial {
			bound = 2
		}
		s := explore(t, HeapHandover(cfg), bound)
		requireNoFailure(t, s)
		if !cfg.Adversarial && s.RunsCounting["reused-across-streams"] == 0 {
			t.Fatalf("%+v: want S to reuse T's buffer in the schedules where T's read had completed: %s", cfg, s)
		}
	}
}

// With room for one buffer only, S gets memory back through the out-of-memory path: a
// device-wide synchronize, then GC, then x.
func TestHeapOutOfMemoryReclaimsAfterDeviceSync(t *testing.T) {
	for _, adversarial := range []bool{false, true} {
		s := explore(t, HeapHandover(HeapConfig{Capacity: 1, Adversarial: adversarial}), 1)
		requireNoFailure(t, s)
		if s.RunsCounting["out-of-memory-reclaim"] == 0 || s.RunsCounting["s-got-x"] != s.Runs {
			t.Fatalf("want S to get x in every run, through the out-of-memory path in some: %s", s)
		}
	}
}

// Handing x to S at once (or GC returning it to the heap without asking whether T's
// work completed) lets S's write land before T's pending read: T's read observes a value
// written by a later owner. Found with a free GPU; in every schedule when T's stream runs
// as late as it can.
func TestHeapReuseBeforeCompletionIsARace(t *testing.T) {
	const race = "observed a value written by a later owner of the memory"
	for _, cfg := range []HeapConfig{{Reuse: ReuseImmediately}, {Reuse: TrimIgnoresCompletion, Trim: true}} {
		t.Run(cfg.Reuse.String(), func(t *testing.T) {
			s := explore(t, HeapHandover(cfg), 1)
			if s.Failures == 0 {
				t.Fatalf("want the search to find the race: %s", s)
			}
			requireFirstFailure(t, s, race)
			cfg.Adversarial = true
			requireEveryRunFails(t, explore(t, HeapHandover(cfg), 2), race)
		})
	}
}

// The buffer id counter bumped under each stream's own pool lock is a data race (two
// locks, no common one), caught by the model's lockset check in every schedule; an atomic
// counter is not.
func TestHeapBufferIDCounter(t *testing.T) {
	requireNoFailure(t, explore(t, HeapHandover(HeapConfig{IDs: AtomicIDs}), 1))
	requireEveryRunFails(t, explore(t, HeapHandover(HeapConfig{IDs: IDsUnderStreamLock}), 1),
		"data race on buffer id counter: S changes it under pool lock 2")
}

// Four threads churning through heaps too small for all of them: a fixed set of random
// schedules and free goroutines find no race with the correct rule; the same seed set
// catches both broken rules.
func TestHeapChurn(t *testing.T) {
	requireNoFailure(t, ExploreRandom(HeapChurn(ReuseAfterCompletion, 4, 4), seeds(60), nil))
	for _, broken := range []HeapReuse{ReuseImmediately, TrimIgnoresCompletion} {
		if s := ExploreRandom(HeapChurn(broken, 4, 4), seeds(60), nil); s.Failures == 0 {
			t.Fatalf("%s: want the seed set to catch the race: %s", broken, s)
		}
	}
	for i := range 10 {
		if o := RunConcurrent(HeapChurn(ReuseAfterCompletion, 4, 8), uint64(i)); o.Failed() {
			t.Fatalf("concurrent run %d: %s", i, o)
		}
	}
}
