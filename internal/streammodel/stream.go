package streammodel

import "fmt"

// Binding says which stream a thread's operators use (SPEC items 1 and 2).
type Binding int

const (
	// DefaultStream: every thread uses stream 0, as in v2.9.1 (the series' default).
	DefaultStream Binding = iota
	// PerThreadStreams: PYTORCH_MPS_PER_THREAD_STREAMS=1; each thread has the stream the
	// scenario binds it to (SetStream), stream 0 for a thread never bound.
	PerThreadStreams
)

// SyncVariant is how the device-wide synchronize (synchronizeAllMPSStreams) works.
type SyncVariant int

const (
	// CommitThenWait is SPEC item 4: commit each stream under its own lock, one stream at
	// a time, collect the committed buffers, and wait for them outside every lock and
	// every queue.
	CommitThenWait SyncVariant = iota
	// WaitInsideQueue is the shape of 0011/0012 (broken): dispatch_sync onto each
	// stream's serial queue and wait for its GPU work inside that block, so the stream's
	// own thread cannot encode until the waiter is done (lockstep).
	WaitInsideQueue
	// CallerStreamOnly is the shape of 0004 (broken): synchronize waits for the calling
	// thread's stream only.
	CallerStreamOnly
)

func (v SyncVariant) String() string {
	return [...]string{"commit-then-wait", "wait-inside-queue", "caller-stream-only"}[v]
}

// InBlockSyncVariant is how a synchronize made from inside a stream's block (the
// out-of-memory path: release_cached_buffers from a malloc inside an operator) treats the
// other streams.
type InBlockSyncVariant int

const (
	// CommittedOnly is SPEC item 4: commit the caller's own stream; for every other stream
	// commit it only if its lock is free now (try-lock), else wait for what it had already
	// committed. Never block on another stream's lock or queue.
	CommittedOnly InBlockSyncVariant = iota
	// DispatchOntoOthers is 0011's off-queue path taken from inside a block (broken):
	// dispatch_sync onto every other stream's queue. Two threads doing it from inside
	// their own streams' blocks wait for each other's queue for ever.
	DispatchOntoOthers
)

func (v InBlockSyncVariant) String() string {
	return [...]string{"committed-only", "dispatch-onto-others"}[v]
}

// Options configure a Runtime.
type Options struct {
	Streams     int // number of streams, 0..Streams-1 (default 1)
	Binding     Binding
	Sync        SyncVariant
	InBlockSync InBlockSyncVariant
	// Debug is PYTORCH_MPS_STREAM_DEBUG=1: every buffer use is checked by the tracker of
	// SPEC item 3 and an unordered cross-stream use fails the operator.
	Debug bool
	GPU   GPUPolicy
}

// A Stream is an MPSStream: a serial dispatch queue that operators enter with
// dispatch_sync, a stream mutex (_streamMutex, recursive) held while encoding and
// committing, and the command buffer being encoded.
type Stream struct {
	ID    int
	Queue *Mutex // the serial dispatch queue (non-recursive)
	Mu    *Mutex // _streamMutex (recursive)

	cur       *CommandBuffer // being encoded; guarded by Mu
	last      *CommandBuffer // the last committed buffer; guarded by Mu
	published *CommandBuffer // the last committed buffer, readable without Mu (an atomic)
	serial    uint64         // encode serial of the last command; guarded by Mu
}

func (s *Stream) String() string { return fmt.Sprintf("stream %d", s.ID) }

// A Runtime is the modelled MPS backend of one World: its streams, its GPU, the debug
// tracker, and which variant of each protocol it runs.
type Runtime struct {
	W       *World
	GPU     *GPU
	Streams []*Stream
	opts    Options
	tracker *tracker
	bound   map[*Thread]*Stream

	// AfterSyncCommit, when set, is called by the device-wide synchronize (every variant)
	// right after it has dealt with stream s and before it waits for anything: a test's
	// hook to let another thread go on at exactly that point.
	AfterSyncCommit func(t *Thread, s *Stream)
}

// NewRuntime adds streams and a GPU to the world.
func NewRuntime(w *World, opts Options) *Runtime {
	if opts.Streams <= 0 {
		opts.Streams = 1
	}
	rt := &Runtime{W: w, opts: opts, bound: map[*Thread]*Stream{}}
	for i := range opts.Streams {
		rt.Streams = append(rt.Streams, &Stream{
			ID:    i,
			Queue: NewMutex(fmt.Sprintf("queue %d", i), false),
			Mu:    NewMutex(fmt.Sprintf("streamMutex %d", i), true),
		})
	}
	rt.GPU = NewGPU(w, opts.Streams, opts.GPU)
	if opts.Debug {
		rt.tracker = newTracker()
	}
	return rt
}

// SetStream binds a thread to a stream (setCurrentMPSStream, or the pool's round-robin
// choice under per-thread streams). Call it while building the scenario.
func (rt *Runtime) SetStream(t *Thread, s int) { rt.bound[t] = rt.Streams[s] }

// Current is getCurrentMPSStream(): stream 0 by default; the thread's own stream under
// per-thread streams.
func (rt *Runtime) Current(t *Thread) *Stream {
	if rt.opts.Binding == PerThreadStreams {
		if s, ok := rt.bound[t]; ok {
			return s
		}
	}
	return rt.Streams[0]
}

// DispatchSync runs block on the stream's serial queue: dispatch_sync(stream->queue(), ...).
func (rt *Runtime) DispatchSync(t *Thread, s *Stream, block func()) {
	s.Queue.Lock(t)
	block()
	s.Queue.Unlock(t)
}

// Op is an operator (a kernel launch, a copy, a graph run): on the stream's queue and under
// its lock it looks up each buffer's storage (getMTLBufferStorage, where the debug tracker
// hooks in) and encodes the commands into the stream's current command buffer. With the
// debug mode on, an unordered cross-stream use returns the tracker's error and encodes
// nothing (TORCH_CHECK).
func (rt *Runtime) Op(t *Thread, s *Stream, cmds ...*Command) error {
	var err error
	rt.DispatchSync(t, s, func() {
		s.Mu.Lock(t)
		t.Do(func() { err = rt.encodeLocked(t, s, cmds) })
		s.Mu.Unlock(t)
	})
	return err
}

// OpInBlock encodes like Op for a caller already inside the stream's block holding its
// lock.
func (rt *Runtime) OpInBlock(t *Thread, s *Stream, cmds ...*Command) error {
	var err error
	t.Do(func() { err = rt.encodeLocked(t, s, cmds) })
	return err
}

func (rt *Runtime) requireLocked(t *Thread, s *Stream, what string) bool {
	if !s.Mu.HeldBy(t) {
		rt.W.Violatef("%s: %s touches %s's command buffer without holding its stream mutex", t.Name, what, s)
		return false
	}
	return true
}

// encodeLocked runs inside an action.
func (rt *Runtime) encodeLocked(t *Thread, s *Stream, cmds []*Command) error {
	if !rt.requireLocked(t, s, "encode") {
		return nil
	}
	if rt.tracker != nil {
		for _, c := range cmds {
			if c.buf == nil {
				continue
			}
			if err := rt.tracker.check(rt, s, c.buf); err != nil {
				return err
			}
		}
	}
	for _, c := range cmds {
		s.serial++
		c.serial = s.serial
		c.stream = s.ID
		if s.cur == nil {
			s.cur = &CommandBuffer{Stream: s.ID}
		}
		s.cur.cmds = append(s.cur.cmds, c)
		if rt.tracker != nil && c.buf != nil {
			rt.tracker.used(s, c.buf, c.serial)
		}
	}
	return nil
}

// commitLocked is MPSStream::commit(): hand the current command buffer to the GPU.
// Runs inside an action, with s.Mu held.
func (rt *Runtime) commitLocked(t *Thread, s *Stream) {
	if !rt.requireLocked(t, s, "commit") || s.cur == nil {
		return
	}
	cb := s.cur
	cb.lastSerial = cb.cmds[len(cb.cmds)-1].serial
	rt.GPU.submit(cb)
	s.last, s.published, s.cur = cb, cb, nil
}

// Commit is MPSStream::commit() from outside the stream's block: under its lock.
func (rt *Runtime) Commit(t *Thread, s *Stream) {
	s.Mu.Lock(t)
	t.Do(func() { rt.commitLocked(t, s) })
	s.Mu.Unlock(t)
}

// WaitCompleted is [commandBuffer waitUntilCompleted].
func (rt *Runtime) WaitCompleted(t *Thread, cb *CommandBuffer) {
	t.await(fmt.Sprintf("wait for stream %d's buffer #%d", cb.Stream, cb.Seq),
		func() bool { return cb.completed }, nothing)
}

// SyncStream is the per-stream synchronize (synchronize(COMMIT_AND_WAIT) as 0011 made it,
// torch.mps.synchronize_stream() of SPEC item 2): commit under the stream's lock, release
// it, wait for the last committed buffer outside every lock.
func (rt *Runtime) SyncStream(t *Thread, s *Stream) {
	var last *CommandBuffer
	s.Mu.Lock(t)
	t.Do(func() {
		rt.commitLocked(t, s)
		last = s.last
	})
	s.Mu.Unlock(t)
	if last != nil {
		rt.WaitCompleted(t, last)
	}
}

// ThreadExit is 0011's thread-exit commit: a worker thread commits the stream it was
// bound to when it ends, so its last command buffer does not wait for another thread.
// Under the default stream nothing happens, as in v2.9.1.
func (rt *Runtime) ThreadExit(t *Thread) {
	if rt.opts.Binding != PerThreadStreams {
		return
	}
	if s, ok := rt.bound[t]; ok {
		rt.Commit(t, s)
	}
}

func (rt *Runtime) afterSyncCommit(t *Thread, s *Stream) {
	if rt.AfterSyncCommit != nil {
		rt.AfterSyncCommit(t, s)
	}
}

// DeviceSync is synchronizeAllMPSStreams() called from outside any stream's block
// (torch.mps.synchronize(), empty_cache(), Event.elapsed_time(), the profiler's
// destructor). Every variant is checked against what the call promises: when it returns,
// all work encoded on any stream before the call has completed.
func (rt *Runtime) DeviceSync(t *Thread) {
	before := make([]uint64, len(rt.Streams))
	t.Do(func() {
		for i, s := range rt.Streams {
			before[i] = s.serial
		}
	})
	switch rt.opts.Sync {
	case CommitThenWait:
		var wait []*CommandBuffer
		for _, s := range rt.Streams {
			s.Mu.Lock(t)
			t.Do(func() {
				rt.commitLocked(t, s)
				if s.last != nil {
					wait = append(wait, s.last)
				}
			})
			s.Mu.Unlock(t)
			rt.afterSyncCommit(t, s)
		}
		for _, cb := range wait {
			rt.WaitCompleted(t, cb)
		}
	case WaitInsideQueue:
		for _, s := range rt.Streams {
			rt.DispatchSync(t, s, func() {
				var last *CommandBuffer
				s.Mu.Lock(t)
				t.Do(func() {
					rt.commitLocked(t, s)
					last = s.last
				})
				s.Mu.Unlock(t)
				rt.afterSyncCommit(t, s)
				if last != nil {
					rt.WaitCompleted(t, last)
				}
			})
		}
	case CallerStreamOnly:
		s := rt.Current(t)
		rt.SyncStream(t, s)
		rt.afterSyncCommit(t, s)
	}
	t.Do(func() {
		for i, s := range rt.Streams {
			if got := rt.GPU.CompletedSerial(s.ID); got < before[i] {
				rt.W.Violatef("%s: device synchronize (%s) returned before %s's work encoded before the call (up to serial %d) completed; completed up to %d",
					t.Name, rt.opts.Sync, s, before[i], got)
				return
			}
		}
	})
}

// SyncInsideBlock is synchronizeAllMPSStreams() reached from inside stream own's block,
// with its queue and lock held: the out-of-memory path (release_cached_buffers from a
// malloc made inside an operator). It is checked against what SPEC item 4 promises there:
// the caller's own stream has completed all its work, and every other stream all the work
// it had committed before the call.
func (rt *Runtime) SyncInsideBlock(t *Thread, own *Stream) {
	var ownBefore uint64
	committedBefore := make([]uint64, len(rt.Streams))
	t.Do(func() {
		if !own.Queue.HeldBy(t) {
			rt.W.Violatef("%s: SyncInsideBlock called outside %s's block", t.Name, own)
		}
		ownBefore = own.serial
		for i, s := range rt.Streams {
			if s.published != nil {
				committedBefore[i] = s.published.lastSerial
			}
		}
	})
	var wait []*CommandBuffer
	own.Mu.Lock(t)
	t.Do(func() {
		rt.commitLocked(t, own)
		if own.last != nil {
			wait = append(wait, own.last)
		}
	})
	own.Mu.Unlock(t)
	for _, s := range rt.Streams {
		if s == own {
			continue
		}
		switch rt.opts.InBlockSync {
		case CommittedOnly:
			if s.Mu.TryLock(t) {
				t.Do(func() {
					rt.commitLocked(t, s)
					if s.last != nil {
						wait = append(wait, s.last)
					}
				})
				s.Mu.Unlock(t)
			} else {
				t.Do(func() {
					if s.published != nil {
						wait = append(wait, s.published)
					}
				})
			}
			rt.afterSyncCommit(t, s)
		case DispatchOntoOthers:
			rt.DispatchSync(t, s, func() {
				var last *CommandBuffer
				s.Mu.Lock(t)
				t.Do(func() {
					rt.commitLocked(t, s)
					last = s.last
				})
				s.Mu.Unlock(t)
				rt.afterSyncCommit(t, s)
				if last != nil {
					rt.WaitCompleted(t, last)
				}
			})
		}
	}
	for _, cb := range wait {
		rt.WaitCompleted(t, cb)
	}
	t.Do(func() {
		for i, s := range rt.Streams {
			want := committedBefore[i]
			if s == own {
				want = ownBefore
			}
			if got := rt.GPU.CompletedSerial(s.ID); got < want {
				rt.W.Violatef("%s: synchronize inside %s's block (%s) returned before %s completed up to serial %d; completed up to %d",
					t.Name, own, rt.opts.InBlockSync, s, want, got)
				return
			}
		}
	})
}
