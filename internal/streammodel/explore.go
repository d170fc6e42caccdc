package streammodel

import (
	"fmt"
	"math/rand/v2"
	"sort"
)

// A Scenario builds one run of a model into a fresh World: it makes the runtime, spawns
// the threads and states the checks. It must be deterministic: the same choices must give
// the same run (no map iteration, no time, no randomness of its own).
type Scenario func(w *World)

// chooser decides the choice points of a Controlled run. preemptive is true when
// alternative 0 continues the thread that ran last, so any other alternative preempts it.
type chooser interface {
	choose(n int, preemptive bool) int
}

// recorder gives back the choices a run made, for Replay.
type recorder interface {
	recorded() []int
}

// Search bounds an exhaustive exploration.
type Search struct {
	// MaxPreemptions bounds how many times one schedule switches away from a thread that
	// could have gone on (preemption bounding, as in Microsoft's CHESS). Switching when the
	// running thread blocks or returns is free. Most concurrency bugs need one or two
	// preemptions; every schedule within the bound is run. A negative value is no bound.
	MaxPreemptions int
	// MaxRuns stops the search after this many runs; Summary.Complete then says false.
	// Zero means 100000.
	MaxRuns int
	// Visit, when set, is called with the outcome of every run, in order.
	Visit func(Outcome)
}

// Summary aggregates the runs of an exploration.
type Summary struct {
	Runs int
	// Complete: every schedule within the bound was run (exhaustive searches only).
	Complete bool
	// Failures counts runs that broke an invariant or deadlocked; Deadlocks and
	// Violations split them.
	Failures, Deadlocks, Violations int
	// FirstFailure is the first failing run, with its schedule and trace.
	FirstFailure *Outcome
	// RunsCounting maps each counter name to the number of runs in which it was above zero.
	RunsCounting map[string]int
}

func (s *Summary) add(o Outcome) {
	s.Runs++
	if o.Failed() {
		s.Failures++
		if len(o.Violations) > 0 {
			s.Violations++
		} else {
			s.Deadlocks++
		}
		if s.FirstFailure == nil {
			oc := o
			s.FirstFailure = &oc
		}
	}
	for k, v := range o.Counts {
		if v > 0 {
			s.RunsCounting[k]++
		}
	}
}

func (s Summary) String() string {
	keys := make([]string, 0, len(s.RunsCounting))
	for k := range s.RunsCounting {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	str := fmt.Sprintf("%d runs (complete %v): %d failed (%d deadlocks, %d violations)",
		s.Runs, s.Complete, s.Failures, s.Deadlocks, s.Violations)
	for _, k := range keys {
		str += fmt.Sprintf(", %s in %d", k, s.RunsCounting[k])
	}
	if s.FirstFailure != nil {
		str += "; first: " + s.FirstFailure.String()
	}
	return str
}

// Explore runs the scenario under every schedule within the search's bound, depth first
// (a stateless model checker: each run replays a prefix of the previous run's choices and
// takes the next untried alternative at the last point that has one). It is deterministic:
// the same scenario and bound always give the same runs in the same order.
func Explore(sc Scenario, s Search) Summary {
	maxRuns := s.MaxRuns
	if maxRuns == 0 {
		maxRuns = 100000
	}
	d := &dfsChooser{bound: s.MaxPreemptions}
	sum := Summary{RunsCounting: map[string]int{}}
	for {
		d.pos = 0
		w := newWorld(Controlled, d, 0)
		sc(w)
		w.runControlled()
		if d.mismatch != "" {
			panic("streammodel: scenario is not deterministic: " + d.mismatch)
		}
		o := w.outcome()
		if s.Visit != nil {
			s.Visit(o)
		}
		sum.add(o)
		if !d.advance() {
			sum.Complete = true
			return sum
		}
		if sum.Runs >= maxRuns {
			return sum
		}
	}
}

// ExploreRandom runs the scenario once per seed, every choice drawn uniformly from the
// seed's generator. A seed list is a fixed set of schedules: the same seeds always run the
// same schedules. visit, when not nil, is called with the outcome of every run.
func ExploreRandom(sc Scenario, seeds []uint64, visit func(Outcome)) Summary {
	sum := Summary{RunsCounting: map[string]int{}}
	for _, seed := range seeds {
		r := &randomChooser{rng: rand.New(rand.NewPCG(seed, 0x5eed))}
		w := newWorld(Controlled, r, seed)
		sc(w)
		w.runControlled()
		o := w.outcome()
		if visit != nil {
			visit(o)
		}
		sum.add(o)
	}
	return sum
}

// Replay runs one schedule: the choices of an Outcome.Schedule, then alternative 0 (keep
// running the same thread; the first stream the GPU may run) where the list ends. Replay
// of nil is the schedule with no preemption at all.
func Replay(sc Scenario, schedule []int) Outcome {
	r := &replayChooser{schedule: schedule}
	w := newWorld(Controlled, r, 0)
	sc(w)
	w.runControlled()
	return w.outcome()
}

// RunConcurrent runs the scenario with real goroutines (Concurrent). seed only drives the
// GPU's choice among ready streams; the interleaving is the Go scheduler's.
func RunConcurrent(sc Scenario, seed uint64) Outcome {
	w := newWorld(Concurrent, nil, seed)
	sc(w)
	w.runConcurrent()
	return w.outcome()
}

type choicePoint struct {
	chosen, n  int
	preemptive bool
}

type dfsChooser struct {
	path     []choicePoint
	pos      int
	bound    int
	mismatch string
}

func (d *dfsChooser) choose(n int, preemptive bool) int {
	if d.pos < len(d.path) {
		c := d.path[d.pos]
		d.pos++
		if c.n != n || c.preemptive != preemptive {
			if d.mismatch == "" {
				d.mismatch = fmt.Sprintf("choice %d had %d alternatives, now %d", d.pos-1, c.n, n)
			}
			if c.chosen >= n {
				return n - 1
			}
		}
		return c.chosen
	}
	d.path = append(d.path, choicePoint{n: n, preemptive: preemptive})
	d.pos++
	return 0
}

func (d *dfsChooser) recorded() []int {
	out := make([]int, d.pos)
	for i := range out {
		out[i] = d.path[i].chosen
	}
	return out
}

// advance moves to the next schedule: the deepest choice point with an untried
// alternative that stays within the preemption bound. It reports false when none is left.
func (d *dfsChooser) advance() bool {
	d.path = d.path[:d.pos]
	for len(d.path) > 0 {
		i := len(d.path) - 1
		c := &d.path[i]
		if c.chosen+1 < c.n && (!c.preemptive || d.bound < 0 || d.preemptionsBefore(i)+1 <= d.bound) {
			c.chosen++
			return true
		}
		d.path = d.path[:i]
	}
	return false
}

func (d *dfsChooser) preemptionsBefore(i int) int {
	n := 0
	for _, c := range d.path[:i] {
		if c.preemptive && c.chosen > 0 {
			n++
		}
	}
	return n
}

type randomChooser struct {
	rng *rand.Rand
	log []int
}

func (r *randomChooser) choose(n int, _ bool) int {
	i := r.rng.IntN(n)
	r.log = append(r.log, i)
	return i
}

func (r *randomChooser) recorded() []int { return r.log }

type replayChooser struct {
	schedule []int
	pos      int
	log      []int
}

func (r *replayChooser) choose(n int, _ bool) int {
	i := 0
	if r.pos < len(r.schedule) {
		i = r.schedule[r.pos]
		if i >= n {
			i = n - 1
		}
	}
	r.pos++
	r.log = append(r.log, i)
	return i
}

func (r *replayChooser) recorded() []int { return r.log }
