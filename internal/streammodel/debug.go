package streammodel

import "fmt"

// UnorderedUseError is the debug mode's TORCH_CHECK (SPEC item 3): a stream used a buffer
// whose last use, on another stream, is not known to be ordered before it.
type UnorderedUseError struct {
	Buffer     string
	Stream     int    // the stream that uses the buffer now
	LastStream int    // the stream that used it last
	LastSerial uint64 // that stream's encode serial at its use
}

func (e *UnorderedUseError) Error() string {
	return fmt.Sprintf("stream debug: buffer %s is used on stream %d, but its use on stream %d (encode serial %d) is not ordered before it: "+
		"record a torch.mps.Event on stream %d after that use and wait for it on stream %d, or synchronize stream %d first",
		e.Buffer, e.Stream, e.LastStream, e.LastSerial, e.LastStream, e.Stream, e.LastStream)
}

type bufferUse struct {
	stream *Stream
	serial uint64
}

// tracker is the side table of the debug mode: for each buffer, the last stream that used
// it and that stream's encode serial then; for each pair of streams, the latest encode
// serial of the recording stream that the waiting stream has waited for through an event.
// In PyTorch it sits behind getMTLBufferStorage in a table keyed by buffer with a sharded
// lock; here each check and update is one atomic step.
type tracker struct {
	last   map[*Buffer]bufferUse
	waited map[[2]int]uint64 // {waiter, recorder} -> recorder's serial at the event's signal
}

func newTracker() *tracker {
	return &tracker{last: map[*Buffer]bufferUse{}, waited: map[[2]int]uint64{}}
}

// check decides whether stream s may use b now: yes if s used it last, or no stream did,
// or the last stream's completed serial has reached its use, or s has waited for an event
// that stream recorded after its use. Runs inside an action.
func (tr *tracker) check(rt *Runtime, s *Stream, b *Buffer) error {
	u, ok := tr.last[b]
	if !ok || u.stream == s {
		return nil
	}
	if rt.GPU.CompletedSerial(u.stream.ID) >= u.serial {
		return nil
	}
	if tr.waited[[2]int{s.ID, u.stream.ID}] > u.serial {
		return nil
	}
	return &UnorderedUseError{Buffer: b.Name, Stream: s.ID, LastStream: u.stream.ID, LastSerial: u.serial}
}

func (tr *tracker) used(s *Stream, b *Buffer, serial uint64) {
	tr.last[b] = bufferUse{stream: s, serial: serial}
}

// waitedFor records that waiter encoded a wait for an event that recorder signalled at
// encode serial signal.
func (tr *tracker) waitedFor(waiter, recorder *Stream, signal uint64) {
	k := [2]int{waiter.ID, recorder.ID}
	if signal > tr.waited[k] {
		tr.waited[k] = signal
	}
}
