package streammodel

import (
	"errors"
	"strings"
	"testing"
)

// The ordered hand-offs (the default single stream; per-thread streams with an event or a
// per-stream synchronize) read the producer's value in every schedule, and the debug
// tracker never refuses them: with a GPU free to run the streams in any order, and with
// one that runs the producer's stream as late as it can.
func TestOrderedHandoffsReadTheProducersValueInEverySchedule(t *testing.T) {
	for _, order := range []HandoffOrder{SameStream, EventOrdered, StreamSyncOrdered} {
		for _, adversarial := range []bool{false, true} {
			name := order.String()
			if adversarial {
				name += "/adversarial-gpu"
			}
			t.Run(name, func(t *testing.T) {
				s := explore(t, Handoff(HandoffConfig{Order: order, Debug: true, Adversarial: adversarial}), 2)
				requireNoFailure(t, s)
				if s.RunsCounting["read"] != s.Runs || s.RunsCounting["debug-raised"] != 0 {
					t.Fatalf("want every run to read and none refused by the debug mode: %s", s)
				}
			})
		}
	}
}

// Two tensors per hand-off thread: the consumer releases each event after use, so the
// producer's next record may reuse it from the pool (the search reaches that in some
// schedules). Two producer/consumer pairs at once are too many schedules for an
// exhaustive search: they run under a fixed set of 200 random schedules.
func TestOrderedHandoffsWithPooledEventsAndTwoPairs(t *testing.T) {
	for _, order := range []HandoffOrder{SameStream, EventOrdered, StreamSyncOrdered} {
		t.Run(order.String(), func(t *testing.T) {
			s := explore(t, Handoff(HandoffConfig{Order: order, Debug: true, Items: 2}), 1)
			requireNoFailure(t, s)
			if order == EventOrdered && s.RunsCounting["event-reused"] == 0 {
				t.Fatalf("want some schedules to hand a pooled event out again: %s", s)
			}
			s = ExploreRandom(Handoff(HandoffConfig{Order: order, Debug: true, Pairs: 2, Items: 2}), seeds(200), nil)
			requireNoFailure(t, s)
			if s.RunsCounting["read"] != s.Runs {
				t.Fatalf("want every run to read: %s", s)
			}
		})
	}
}

// Without any order, the consumer's stream reads before the producer's GPU wrote: found
// by the search with a free GPU, and in every schedule when the producer's stream runs as
// late as it can.
func TestUnorderedHandoffReadsBeforeTheWrite(t *testing.T) {
	s := explore(t, Handoff(HandoffConfig{Order: Unordered}), 1)
	if s.Failures == 0 || s.Failures == s.Runs {
		t.Fatalf("want some schedules (the GPU ran the producer first) to pass and some to fail: %s", s)
	}
	requireFirstFailure(t, s, "read x0.0 and saw nothing (the buffer's initial contents)")
	requireEveryRunFails(t, explore(t, Handoff(HandoffConfig{Order: Unordered, Adversarial: true}), 2),
		"memory no one had written yet")
	if s := ExploreRandom(Handoff(HandoffConfig{Order: Unordered, Pairs: 2, Items: 2}), seeds(200), nil); s.Failures == 0 {
		t.Fatalf("want the fixed seed set to catch two unordered pairs: %s", s)
	}
}

// The debug mode raises on the unordered hand-off, and never lets it read a wrong value:
// in every schedule the read is either refused or comes after the producer's work
// completed; when the producer's stream is starved, it is refused in every schedule.
func TestDebugModeRaisesOnTheUnorderedHandoff(t *testing.T) {
	s := explore(t, Handoff(HandoffConfig{Order: Unordered, Debug: true}), 2)
	requireNoFailure(t, s)
	if s.RunsCounting["debug-raised"] == 0 || s.RunsCounting["read"] == 0 {
		t.Fatalf("want refusals where the producer's work was pending and reads where it had completed: %s", s)
	}
	s = explore(t, Handoff(HandoffConfig{Order: Unordered, Debug: true, Adversarial: true}), 2)
	requireNoFailure(t, s)
	if s.RunsCounting["debug-raised"] != s.Runs {
		t.Fatalf("want a refusal in every run: %s", s)
	}
}

// The refusal names both streams and says what to do.
func TestDebugModeErrorNamesBothStreams(t *testing.T) {
	var got error
	Replay(func(w *World) {
		rt := NewRuntime(w, Options{Streams: 3, Binding: PerThreadStreams, Debug: true})
		x := &Buffer{Name: "x"}
		wrote := NewLatch("wrote")
		p := w.Go("producer", func(t *Thread) {
			_ = rt.Op(t, rt.Current(t), Write(x, Stamp{Value: 1}))
			wrote.Open(t)
		})
		c := w.Go("consumer", func(t *Thread) {
			wrote.Wait(t)
			got = rt.Op(t, rt.Current(t), Read(x, Stamp{Value: 1}))
		})
		rt.SetStream(p, 1)
		rt.SetStream(c, 2)
	}, nil)
	var unordered *UnorderedUseError
	if !errors.As(got, &unordered) || unordered.Stream != 2 || unordered.LastStream != 1 || unordered.LastSerial != 1 {
		t.Fatalf("got %v", got)
	}
	for _, want := range []string{"buffer x is used on stream 2", "its use on stream 1", "torch.mps.Event", "synchronize stream 1"} {
		if !strings.Contains(got.Error(), want) {
			t.Errorf("error %q does not say %q", got, want)
		}
	}
}
