package streammodel

import "testing"

// SPEC item 7: three threads miss the same key at once; it is compiled once, the others
// wait for it, and each thread's second lookup is a thread-local hit that takes no lock.
func TestFirstCompileOncePerKey(t *testing.T) {
	s := explore(t, FirstCompile(PerKeyLock, 3), 2)
	requireNoFailure(t, s)
	if s.RunsCounting["hit"] != s.Runs {
		t.Fatalf("want thread-local hits in every run: %s", s)
	}
	for i := range 10 {
		if o := RunConcurrent(FirstCompile(PerKeyLock, 8), uint64(i)); o.Failed() {
			t.Fatalf("concurrent run %d: %s", i, o)
		}
	}
}

// Without the per-key lock, two threads that miss before either has stored the graph
// both compile it (at once, or one after the other): the search needs one preemption.
func TestFirstCompileWithoutAKeyLockCompilesTwice(t *testing.T) {
	s := explore(t, FirstCompile(NoKeyLock, 3), 1)
	if s.Failures == 0 {
		t.Fatalf("want a schedule that compiles twice: %s", s)
	}
	at, twice := false, false
	exploreVisit(t, FirstCompile(NoKeyLock, 2), 2, func(o Outcome) {
		at = at || containsAny(o.Violations, "threads compile graph \"linear\" at once")
		twice = twice || containsAny(o.Violations, "compiled 2 times")
	})
	if !at || !twice {
		t.Fatalf("want both overlapping compiles (%v) and a compile after another (%v)", at, twice)
	}
}

// One global lock around every lookup compiles once but makes each hit take the lock.
func TestFirstCompileWithAGlobalLockLocksOnHits(t *testing.T) {
	requireEveryRunFails(t, explore(t, FirstCompile(GlobalLockOnLookup, 3), 1),
		"a thread-local cache hit for \"linear\" took a lock")
}
