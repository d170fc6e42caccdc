package streammodel

import (
	"slices"
	"testing"
)

// The GPU completes B's work only after B's thread has encoded k more operations past the
// synchronize's commit of B. With SPEC item 4's synchronize (commit under each stream's
// lock, wait outside every lock and queue) every schedule ends, and in every one B encodes
// all k operations while A is still inside the synchronize.
func TestDeviceSyncLetsTheOtherStreamKeepEncoding(t *testing.T) {
	const k = 2
	s := exploreVisit(t, SyncWhileEncoding(CommitThenWait, k), 1, func(o Outcome) {
		if !o.Failed() && o.Counts["encoded-while-sync-waits"] != k {
			t.Errorf("B encoded %d operations while A waited, want %d: %s", o.Counts["encoded-while-sync-waits"], k, o)
		}
	})
	requireNoFailure(t, s)
}

// 0011/0012's synchronize waits for B's GPU work inside B's serial-queue block: B's thread
// cannot enter its own queue to encode, the GPU never gets the k operations it waits for,
// and every schedule ends with both threads blocked (no timeout: the explorer sees that no
// thread can take a step).
func TestDeviceSyncWaitingInsideTheQueueBlocksTheOtherStream(t *testing.T) {
	s := explore(t, SyncWhileEncoding(WaitInsideQueue, 2), 2)
	if s.Deadlocks != s.Runs {
		t.Fatalf("want every schedule to deadlock: %s", s)
	}
	if d := s.FirstFailure.Deadlock; !slices.Contains(d, "B: lock queue 2 (held by A)") {
		t.Fatalf("want B blocked on its own queue, held by A: %q", d)
	}
}

// The same two scenarios with free goroutines and the GPU on its own goroutine: the
// correct synchronize ends, the broken one deadlocks, whatever the Go scheduler does.
func TestDeviceSyncConcurrent(t *testing.T) {
	for i := range 10 {
		if o := RunConcurrent(SyncWhileEncoding(CommitThenWait, 8), uint64(i)); o.Failed() {
			t.Fatalf("run %d: %s", i, o)
		}
		if o := RunConcurrent(SyncWhileEncoding(WaitInsideQueue, 8), uint64(i)); !slices.Contains(o.Deadlock, "B: lock queue 2 (held by A)") {
			t.Fatalf("run %d: want B blocked on its queue: %s", i, o)
		}
	}
}

// After the device-wide synchronize the main thread reads what the workers wrote on their
// streams (test_sync.py::test_main_thread_sync_reads_workers). Both shapes that wait for
// every stream pass; 0004's caller-only synchronize returns before the workers' work ran
// in every schedule where their streams run late.
func TestDeviceSyncWaitsForEveryStream(t *testing.T) {
	for _, v := range []SyncVariant{CommitThenWait, WaitInsideQueue} {
		t.Run(v.String(), func(t *testing.T) {
			requireNoFailure(t, explore(t, SyncAfterWorkers(v, 2, true), 1))
			requireNoFailure(t, explore(t, SyncAfterWorkers(v, 2, false), 0))
		})
	}
	requireEveryRunFails(t, explore(t, SyncAfterWorkers(CallerStreamOnly, 2, true), 1),
		"device synchronize (caller-stream-only) returned before stream 1's work")
}

// Two threads inside their own streams' blocks both reach the synchronize (the
// out-of-memory path). SPEC item 4's variant (commit the own stream; try-lock the others
// or wait only for what they had committed) ends in every schedule and meets its
// postcondition; dispatching onto the other stream's queue deadlocks in every schedule.
func TestSyncFromInsideTwoBlocks(t *testing.T) {
	s := explore(t, SyncFromInsideBlocks(CommittedOnly), 1)
	requireNoFailure(t, s)
	if s.RunsCounting["returned"] != s.Runs {
		t.Fatalf("want both threads to return in every run: %s", s)
	}
	s = explore(t, SyncFromInsideBlocks(DispatchOntoOthers), 1)
	if s.Deadlocks != s.Runs {
		t.Fatalf("want every schedule to deadlock: %s", s)
	}
	d := s.FirstFailure.Deadlock
	if !slices.Contains(d, "A: lock queue 2 (held by B)") || !slices.Contains(d, "B: lock queue 1 (held by A)") {
		t.Fatalf("want each thread blocked on the other's queue: %q", d)
	}
	for i := range 10 {
		if o := RunConcurrent(SyncFromInsideBlocks(CommittedOnly), uint64(i)); o.Failed() {
			t.Fatalf("concurrent run %d: %s", i, o)
		}
		if o := RunConcurrent(SyncFromInsideBlocks(DispatchOntoOthers), uint64(i)); len(o.Deadlock) == 0 {
			t.Fatalf("concurrent run %d: want a deadlock: %s", i, o)
		}
	}
}

// Workers encode and synchronize their own streams while the main thread synchronizes the
// device again and again: a fixed set of random schedules, and free goroutines.
func TestDeviceSyncUnderLoad(t *testing.T) {
	requireNoFailure(t, ExploreRandom(SyncStress(CommitThenWait, 3, 6), seeds(100), nil))
	for i := range 10 {
		if o := RunConcurrent(SyncStress(CommitThenWait, 4, 30), uint64(i)); o.Failed() {
			t.Fatalf("concurrent run %d: %s", i, o)
		}
	}
}
