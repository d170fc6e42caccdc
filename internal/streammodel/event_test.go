package streammodel

import (
	"slices"
	"strings"
	"testing"
)

// A pooled event is released with its signal still to land and handed to another thread.
// With SPEC item 5's monotonic counter no query, synchronize or stream wait of the new
// acquisition is satisfied by the old signal: in every schedule of a free GPU (no
// preemption) and of the adversarial GPU (one preemption).
func TestReusedEventWithMonotonicCounterWaitsForItsOwnSignal(t *testing.T) {
	for _, tc := range []struct {
		adversarial bool
		bound       int
	}{{false, 0}, {true, 1}} {
		s := explore(t, EventReuseScenario(MonotonicCounter, tc.adversarial), tc.bound)
		requireNoFailure(t, s)
		if s.RunsCounting["event-reused"] != s.Runs {
			t.Fatalf("want the event handed out again in every run: %s", s)
		}
	}
}

// With the counter reset on reuse (0010/0013's MPSEvent::reset) the new acquisition
// records value 1 again, which the old signal already has or will reach. With a free GPU
// the search finds it, among others where the old signal landed before the reuse and
// query() is true before the new signal ran. When the old signal lands late it is caught
// in every schedule (within one preemption) by the synchronize that returns early or by
// the stream wait that lets T3 read first.
func TestReusedEventWithResetCounterIsSatisfiedByTheOldSignal(t *testing.T) {
	query := false
	s := exploreVisit(t, EventReuseScenario(ResetCounterOnReuse, false), 0, func(o Outcome) {
		query = query || containsAny(o.Violations, "query() is true before this acquisition's signal")
	})
	if s.Failures == 0 || !query {
		t.Fatalf("want the search to find early wake-ups, an early query() among them (%v): %s", query, s)
	}
	synchronize, wait := 0, 0
	s = exploreVisit(t, EventReuseScenario(ResetCounterOnReuse, true), 1, func(o Outcome) {
		switch {
		case containsAny(o.Violations, "synchronize() returned before this acquisition's signal"):
			synchronize++
		case containsAny(o.Violations, "stream 3 read x and saw nothing"):
			wait++
		}
	})
	if s.Failures != s.Runs {
		t.Fatalf("want every schedule to fail: %s", s)
	}
	if synchronize == 0 || wait == 0 || synchronize+wait != s.Runs {
		t.Fatalf("want each run caught by the early synchronize or the early stream wait, both seen: %d + %d of %d",
			synchronize, wait, s.Runs)
	}
}

// getInUseEvent on an unknown id: reporting the error with the pool mutex still taken
// blocks every later event call for good.
func TestEventLookupErrorReleasesThePoolMutex(t *testing.T) {
	requireNoFailure(t, explore(t, EventLookupAfterError(UnlockBeforeError), 2))
	s := explore(t, EventLookupAfterError(ErrorUnderPoolMutex), 2)
	if s.Deadlocks != s.Runs || !slices.Contains(s.FirstFailure.Deadlock, "T2: lock event pool mutex (held by T1)") {
		t.Fatalf("want T2 blocked on the pool mutex in every schedule: %s", s)
	}
}

// Events recorded and waited for across threads with free goroutines.
func TestReusedEventConcurrent(t *testing.T) {
	for i := range 20 {
		if o := RunConcurrent(EventReuseScenario(MonotonicCounter, false), uint64(i)); o.Failed() {
			t.Fatalf("run %d: %s", i, o)
		}
		if o := RunConcurrent(Handoff(HandoffConfig{Order: EventOrdered, Debug: true, Pairs: 3, Items: 20}), uint64(i)); o.Failed() {
			t.Fatalf("run %d: %s", i, o)
		}
	}
}

func containsAny(list []string, sub string) bool {
	return slices.ContainsFunc(list, func(s string) bool { return strings.Contains(s, sub) })
}
