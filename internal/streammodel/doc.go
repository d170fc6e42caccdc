// Package streammodel is a runnable model of the MPS stream protocols that the patch
// series puts into PyTorch (issue 18), and the small model checker that runs it.
//
// Every blocking operation of a model (a lock, a wait, a queue get) is one primitive:
// wait until a guard holds, then act atomically. Under Controlled mode only one model
// thread runs at a time, and before each such step a chooser decides which enabled thread
// goes on: Explore runs every schedule within a preemption bound, depth first
// (deterministic, complete within the bound); ExploreRandom runs a fixed list of seeded
// random schedules; Replay runs one recorded schedule. A state where no thread can take a
// step and some thread has not returned is a deadlock, seen exactly, never by a timeout.
// Under Concurrent mode every model thread is a free goroutine; each step takes one world
// lock, so `go test -race` checks the model's own bookkeeping, and deadlocks are still
// detected exactly. A lockset check (SharedVar) flags a plain field mutated under two
// different locks.
package streammodel
