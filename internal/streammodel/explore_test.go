package streammodel

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// explore runs an exhaustive search that must finish within its run limit.
func explore(t *testing.T, sc Scenario, bound int) Summary {
	t.Helper()
	return exploreVisit(t, sc, bound, nil)
}

func exploreVisit(t *testing.T, sc Scenario, bound int, visit func(Outcome)) Summary {
	t.Helper()
	s := Explore(sc, Search{MaxPreemptions: bound, MaxRuns: 50000, Visit: visit})
	if !s.Complete {
		t.Fatalf("the search did not finish within its run limit: %s", s)
	}
	if s.Runs < 2 {
		t.Fatalf("the search ran %d schedule(s); a scenario with one schedule checks nothing about interleavings", s.Runs)
	}
	return s
}

func requireNoFailure(t *testing.T, s Summary) {
	t.Helper()
	if s.Failures > 0 {
		t.Fatalf("%s\ntrace of the first failing run:\n%s", s, s.FirstFailure.TraceText())
	}
}

// requireEveryRunFails: the broken variant is caught in every schedule, with a failure
// whose text contains want.
func requireEveryRunFails(t *testing.T, s Summary, want string) {
	t.Helper()
	if s.Failures != s.Runs {
		t.Fatalf("want every schedule to fail, got %s", s)
	}
	requireFirstFailure(t, s, want)
}

func requireFirstFailure(t *testing.T, s Summary, want string) {
	t.Helper()
	if s.FirstFailure == nil {
		t.Fatalf("want a failing schedule, got %s", s)
	}
	if got := s.FirstFailure.String(); !strings.Contains(got, want) {
		t.Fatalf("first failure = %q, want it to contain %q", got, want)
	}
}

// yielders is n threads that each take k scheduling points after their start.
func yielders(n, k int) Scenario {
	return func(w *World) {
		for i := range n {
			w.Go(fmt.Sprintf("t%d", i), func(t *Thread) {
				for j := range k {
					t.Yield(fmt.Sprintf("step%d", j+1))
				}
			})
		}
	}
}

// interleavings counts, independently of the explorer, the schedules of n threads with
// steps scheduling points each that switch away from a thread with steps left at most
// bound times (bound < 0: no limit).
func interleavings(n, steps, bound int) int {
	left := make([]int, n)
	for i := range left {
		left[i] = steps
	}
	var walk func(cur, preemptions int) int
	walk = func(cur, preemptions int) int {
		total, any := 0, false
		for i := range left {
			if left[i] == 0 {
				continue
			}
			any = true
			p := preemptions
			if cur >= 0 && cur != i && left[cur] > 0 {
				p++
			}
			if bound >= 0 && p > bound {
				continue
			}
			left[i]--
			total += walk(i, p)
			left[i]++
		}
		if !any {
			return 1
		}
		return total
	}
	return walk(-1, 0)
}

func TestExploreRunsEveryScheduleWithinTheBoundOnce(t *testing.T) {
	for _, tc := range []struct{ n, k, bound int }{
		{2, 2, -1}, {3, 1, -1}, {2, 3, 0}, {2, 3, 1}, {3, 2, 1}, {3, 2, 2},
	} {
		t.Run(fmt.Sprintf("n%d-k%d-p%d", tc.n, tc.k, tc.bound), func(t *testing.T) {
			seen := map[string]bool{}
			s := Explore(yielders(tc.n, tc.k), Search{MaxPreemptions: tc.bound, Visit: func(o Outcome) {
				seen[o.TraceText()] = true
			}})
			want := interleavings(tc.n, tc.k+1, tc.bound) // the start is a scheduling point too
			if !s.Complete || s.Runs != want || len(seen) != want || s.Failures != 0 {
				t.Fatalf("have %s, %d distinct traces; want %d runs, all distinct", s, len(seen), want)
			}
		})
	}
}

func TestExploreIsDeterministic(t *testing.T) {
	sc := opposite
	var first, second []string
	Explore(sc, Search{MaxPreemptions: 1, Visit: func(o Outcome) { first = append(first, o.String()) }})
	Explore(sc, Search{MaxPreemptions: 1, Visit: func(o Outcome) { second = append(second, o.String()) }})
	if !slices.Equal(first, second) {
		t.Fatalf("two searches of one scenario differ: %d and %d runs", len(first), len(second))
	}
}

// opposite is two threads taking two mutexes in opposite orders.
func opposite(w *World) {
	m1, m2 := NewMutex("m1", false), NewMutex("m2", false)
	for _, order := range [][2]*Mutex{{m1, m2}, {m2, m1}} {
		w.Go("take "+order[0].Name+" then "+order[1].Name, func(t *Thread) {
			order[0].Lock(t)
			order[1].Lock(t)
			order[1].Unlock(t)
			order[0].Unlock(t)
		})
	}
}

func TestExploreFindsALockOrderDeadlockWithOnePreemption(t *testing.T) {
	if s := explore(t, opposite, 0); s.Deadlocks != 0 {
		t.Fatalf("without preemption each thread takes both locks in one go, yet: %s", s)
	}
	s := explore(t, opposite, 1)
	if s.Deadlocks == 0 || s.Deadlocks == s.Runs {
		t.Fatalf("want some but not all schedules to deadlock: %s", s)
	}
	requireFirstFailure(t, s, "lock m2 (held by take m2 then m1)")
	requireFirstFailure(t, s, "lock m1 (held by take m1 then m2)")
}

func TestReplayReproducesAFailingSchedule(t *testing.T) {
	sc := opposite
	s := explore(t, sc, 1)
	requireFirstFailure(t, s, "held by")
	o := Replay(sc, s.FirstFailure.Schedule)
	if o.String() != s.FirstFailure.String() || o.TraceText() != s.FirstFailure.TraceText() {
		t.Fatalf("replay gave %s\nwant %s", o, s.FirstFailure)
	}
}

func TestExploreRandomIsAFixedSetOfSchedules(t *testing.T) {
	sc := yielders(3, 4)
	var first, second []string
	ExploreRandom(sc, seeds(20), func(o Outcome) { first = append(first, o.TraceText()) })
	ExploreRandom(sc, seeds(20), func(o Outcome) { second = append(second, o.TraceText()) })
	if !slices.Equal(first, second) {
		t.Fatal("one seed list gave two sets of schedules")
	}
	slices.Sort(first)
	if len(slices.Compact(first)) < 10 {
		t.Fatalf("20 seeds gave %d distinct schedules of 3 threads with 5 steps each", len(first))
	}
	if s := ExploreRandom(opposite, seeds(50), nil); s.Deadlocks == 0 || s.Deadlocks == s.Runs {
		t.Fatalf("want some of 50 random schedules to deadlock: %s", s)
	}
}

func seeds(n int) []uint64 {
	out := make([]uint64, n)
	for i := range out {
		out[i] = uint64(i + 1)
	}
	return out
}

func TestARunThatLoopsForEverIsStopped(t *testing.T) {
	o := Replay(func(w *World) {
		w.Go("spinner", func(t *Thread) {
			for {
				t.Yield("spin")
			}
		})
	}, nil)
	if len(o.Violations) != 1 || !strings.Contains(o.Violations[0], "exceeded") {
		t.Fatalf("want a step-limit violation, got %s", o)
	}
}

func TestAPanicInModelCodeIsAViolation(t *testing.T) {
	for _, mode := range []Mode{Controlled, Concurrent} {
		sc := func(w *World) {
			w.Go("buggy", func(t *Thread) {
				var m map[string]int
				m["x"]++
			})
		}
		var o Outcome
		if mode == Controlled {
			o = Replay(sc, nil)
		} else {
			o = RunConcurrent(sc, 1)
		}
		if len(o.Violations) != 1 || !strings.Contains(o.Violations[0], "buggy panicked") {
			t.Fatalf("%s: want the panic recorded as a violation, got %s", mode, o)
		}
	}
}

// Two threads take two locks in opposite orders with a barrier between their first and
// second lock, so they deadlock whatever the Go scheduler does.
func TestConcurrentRunsSeeADeadlockWithoutATimeout(t *testing.T) {
	sc := func(w *World) {
		m1, m2 := NewMutex("m1", false), NewMutex("m2", false)
		both := NewBarrier("both hold one", 2)
		for _, order := range [][2]*Mutex{{m1, m2}, {m2, m1}} {
			w.Go("first "+order[0].Name, func(t *Thread) {
				order[0].Lock(t)
				both.Arrive(t)
				order[1].Lock(t)
			})
		}
	}
	for i := range 10 {
		o := RunConcurrent(sc, uint64(i))
		if !slices.Equal(o.Deadlock, []string{"first m1: lock m2 (held by first m2)", "first m2: lock m1 (held by first m1)"}) {
			t.Fatalf("run %d: want each thread blocked on the other's lock, got %s", i, o)
		}
	}
}

func TestLocksetFlagsACounterBumpedUnderTwoLocks(t *testing.T) {
	run := func(sameLock bool) Outcome {
		return Replay(func(w *World) {
			v := &SharedVar{Name: "counter"}
			m1, m2 := NewMutex("m1", false), NewMutex("m2", false)
			for i, m := range []*Mutex{m1, m2} {
				if sameLock {
					m = m1
				}
				w.Go(fmt.Sprintf("t%d", i), func(t *Thread) {
					m.Lock(t)
					v.Add(t, 1)
					m.Unlock(t)
				})
			}
		}, nil)
	}
	if o := run(true); o.Failed() {
		t.Fatalf("one lock guards every access, yet: %s", o)
	}
	if o := run(false); len(o.Violations) != 1 || !strings.Contains(o.Violations[0], "data race on counter") {
		t.Fatalf("want a lockset violation, got %s", o)
	}
}

func TestUnlockingAMutexNotHeldIsAViolation(t *testing.T) {
	o := Replay(func(w *World) {
		m := NewMutex("m", false)
		w.Go("t", func(t *Thread) { m.Unlock(t) })
	}, nil)
	if len(o.Violations) != 1 || !strings.Contains(o.Violations[0], "does not hold") {
		t.Fatalf("got %s", o)
	}
}
