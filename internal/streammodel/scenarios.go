package streammodel

import (
	"errors"
	"fmt"
)

// HandoffOrder is how a producer thread's tensor is ordered before a consumer thread
// reads it (SPEC items 1 and 2).
type HandoffOrder int

const (
	// SameStream: the default. Both threads use stream 0, so the consumer's read is
	// encoded after the producer's write on one queue, as in v2.9.1.
	SameStream HandoffOrder = iota
	// EventOrdered: per-thread streams; the producer records a torch.mps.Event on its
	// stream after the write, the consumer's stream waits for it before the read.
	EventOrdered
	// StreamSyncOrdered: per-thread streams; the producer synchronizes its own stream
	// (torch.mps.synchronize_stream()) before handing the tensor over.
	StreamSyncOrdered
	// Unordered (broken): per-thread streams and nothing else, as 0001 bound streams
	// automatically: the consumer's stream can read before the producer's GPU wrote.
	Unordered
)

func (o HandoffOrder) String() string {
	return [...]string{"same-stream", "event", "stream-sync", "unordered"}[o]
}

// HandoffConfig sizes the hand-off scenario.
type HandoffConfig struct {
	Order HandoffOrder
	// Debug turns on PYTORCH_MPS_STREAM_DEBUG's tracker: a refused read is counted as
	// "debug-raised" instead of being encoded.
	Debug bool
	// Adversarial starves the producers' streams (GPUPolicy.Starve): their work runs only
	// when nothing else can go on. Controlled only.
	Adversarial bool
	Pairs       int // producer/consumer pairs (default 1)
	Items       int // tensors each producer hands over (default 1)
}

type handoff struct {
	buf   *Buffer
	want  Stamp
	event *Event
}

// Handoff is a prefetch thread handing tensors to a consumer through a queue.Queue: the
// producer writes each tensor on the GPU (x.to('mps', non_blocking=True)) and puts it on
// the queue; the consumer takes it, reads it on its own stream and synchronizes (.cpu()).
// The read must see the producer's value. Counts: "read" for each read that ran,
// "debug-raised" for each the debug mode refused.
func Handoff(cfg HandoffConfig) Scenario {
	pairs, items := max(cfg.Pairs, 1), max(cfg.Items, 1)
	return func(w *World) {
		opts := Options{Streams: 1 + 2*pairs, Binding: PerThreadStreams, Debug: cfg.Debug}
		if cfg.Order == SameStream {
			opts.Binding = DefaultStream
		}
		if cfg.Adversarial {
			if cfg.Order == SameStream {
				opts.GPU.Starve = []int{0}
			}
			for p := range pairs {
				opts.GPU.Starve = append(opts.GPU.Starve, 1+2*p)
			}
		}
		rt := NewRuntime(w, opts)
		pool := NewEventPool(rt, MonotonicCounter, UnlockBeforeError)
		for p := range pairs {
			ch := NewChan[handoff](fmt.Sprintf("queue %d", p))
			producer := w.Go(fmt.Sprintf("producer%d", p), func(t *Thread) {
				s := rt.Current(t)
				for i := range items {
					x := &Buffer{Name: fmt.Sprintf("x%d.%d", p, i)}
					want := Stamp{Value: 1000*(p+1) + i + 1, By: t.Name}
					if err := rt.Op(t, s, Write(x, want)); err != nil {
						t.Fail("%s: write refused: %v", t.Name, err)
						return
					}
					h := handoff{buf: x, want: want}
					switch cfg.Order {
					case EventOrdered:
						h.event = pool.Acquire(t)
						pool.Record(t, h.event, s)
					case StreamSyncOrdered:
						rt.SyncStream(t, s)
					}
					ch.Put(t, h)
				}
				rt.ThreadExit(t)
			})
			consumer := w.Go(fmt.Sprintf("consumer%d", p), func(t *Thread) {
				s := rt.Current(t)
				for range items {
					h := ch.Get(t)
					if h.event != nil {
						pool.WaitOn(t, h.event, s)
					}
					err := rt.Op(t, s, Read(h.buf, h.want))
					var unordered *UnorderedUseError
					switch {
					case errors.As(err, &unordered):
						t.Note("debug-raised")
					case err != nil:
						t.Fail("%s: %v", t.Name, err)
						return
					default:
						rt.SyncStream(t, s)
						t.Note("read")
					}
					if h.event != nil {
						pool.Release(t, h.event)
					}
				}
				rt.ThreadExit(t)
			})
			rt.SetStream(producer, 1+2*p)
			rt.SetStream(consumer, 2+2*p)
		}
	}
}

// SyncWhileEncoding is thread A calling the device-wide synchronize while thread B keeps
// encoding on its own stream. The GPU completes B's work only after B has encoded k more
// operations past the point where the synchronize committed B's stream (GPUPolicy.Hold),
// so B must be able to encode while A waits for B's GPU work. With the correct variant
// every schedule ends, with "encoded-while-sync-waits" = k; with WaitInsideQueue A waits
// inside B's queue, B cannot encode, and every schedule deadlocks.
func SyncWhileEncoding(variant SyncVariant, k int) Scenario {
	return func(w *World) {
		const a, b = 1, 2
		pending := NewLatch("B has pending work")
		dealt := NewLatch("synchronize dealt with B")
		var afterCommit int
		syncReturned := false
		rt := NewRuntime(w, Options{Streams: 3, Binding: PerThreadStreams, Sync: variant,
			GPU: GPUPolicy{Hold: func(s int) bool { return s == b && afterCommit < k }}})
		rt.AfterSyncCommit = func(t *Thread, s *Stream) {
			if s.ID == b {
				dealt.Open(t)
			}
		}
		ta := w.Go("A", func(t *Thread) {
			s := rt.Current(t)
			_ = rt.Op(t, s, Write(&Buffer{Name: "a"}, Stamp{Value: 1, By: "A"}))
			pending.Wait(t)
			rt.DeviceSync(t)
			t.Do(func() { syncReturned = true })
			rt.ThreadExit(t)
		})
		tb := w.Go("B", func(t *Thread) {
			s := rt.Current(t)
			_ = rt.Op(t, s, Write(&Buffer{Name: "b0"}, Stamp{Value: 1, By: "B"}))
			pending.Open(t)
			dealt.Wait(t)
			for i := range k {
				_ = rt.Op(t, s, Write(&Buffer{Name: fmt.Sprintf("b%d", i+1)}, Stamp{Value: 1, By: "B"}))
				t.Do(func() {
					afterCommit++
					if !syncReturned {
						w.Count("encoded-while-sync-waits")
					}
				})
			}
			rt.SyncStream(t, s)
			rt.ThreadExit(t)
		})
		rt.SetStream(ta, a)
		rt.SetStream(tb, b)
	}
}

// SyncAfterWorkers is the main thread synchronizing the device after worker threads
// encoded work on their own streams, then reading their results on the CPU
// (test_sync.py::test_main_thread_sync_reads_workers). The synchronize's postcondition is
// checked inside DeviceSync; the CPU read is checked again here.
func SyncAfterWorkers(variant SyncVariant, workers int, adversarial bool) Scenario {
	return func(w *World) {
		opts := Options{Streams: 1 + workers, Binding: PerThreadStreams, Sync: variant}
		if adversarial {
			for i := range workers {
				opts.GPU.Starve = append(opts.GPU.Starve, 1+i)
			}
		}
		rt := NewRuntime(w, opts)
		done := NewBarrier("workers encoded", workers+1)
		results := make([]*Buffer, workers)
		for i := range workers {
			results[i] = &Buffer{Name: fmt.Sprintf("y%d", i)}
			wt := w.Go(fmt.Sprintf("worker%d", i), func(t *Thread) {
				_ = rt.Op(t, rt.Current(t), Write(results[i], Stamp{Value: i + 1, By: t.Name}))
				done.Arrive(t)
			})
			rt.SetStream(wt, 1+i)
		}
		w.Go("main", func(t *Thread) {
			done.Arrive(t)
			rt.DeviceSync(t)
			t.Do(func() {
				for i, y := range results {
					if y.mem.Value != i+1 {
						w.Violatef("main: after torch.mps.synchronize() the CPU read %s and saw %s", y.Name, y.mem)
						return
					}
				}
			})
		})
	}
}

// SyncFromInsideBlocks is the out-of-memory path on two streams at once: thread A, inside
// stream A's block with its lock held, synchronizes the device while thread B does the
// same from inside stream B's block (a barrier makes both be inside first). The correct
// variant ends in every schedule; DispatchOntoOthers deadlocks in every schedule.
func SyncFromInsideBlocks(variant InBlockSyncVariant) Scenario {
	return func(w *World) {
		rt := NewRuntime(w, Options{Streams: 3, Binding: PerThreadStreams, InBlockSync: variant})
		inside := NewBarrier("both inside their blocks", 2)
		for i, name := range []string{"A", "B"} {
			th := w.Go(name, func(t *Thread) {
				s := rt.Current(t)
				rt.DispatchSync(t, s, func() {
					s.Mu.Lock(t)
					_ = rt.OpInBlock(t, s, Write(&Buffer{Name: "tmp" + name}, Stamp{Value: 1, By: name}))
					inside.Arrive(t)
					rt.SyncInsideBlock(t, s)
					s.Mu.Unlock(t)
				})
				t.Note("returned")
			})
			rt.SetStream(th, 1+i)
		}
	}
}

// EventReuseScenario is a pooled event handed from one use to the next while the first
// use's signal is still to land (SPEC item 5). T1 records the event on stream 1 and
// releases it; T2 gets the same event from the pool, writes x on stream 2, records the
// event there, queries it and synchronizes on it; T3 waits for it on stream 3 and reads
// x. With adversarial on, stream 1's old signal lands as late as possible and stream 2's
// work later still.
func EventReuseScenario(reuse EventReuse, adversarial bool) Scenario {
	return func(w *World) {
		opts := Options{Streams: 4, Binding: PerThreadStreams}
		if adversarial {
			opts.GPU.Starve = []int{1, 2}
		}
		rt := NewRuntime(w, opts)
		pool := NewEventPool(rt, reuse, UnlockBeforeError)
		released := NewLatch("T1 released the event")
		ch := NewChan[handoff]("T2 to T3")
		t1 := w.Go("T1", func(t *Thread) {
			s := rt.Current(t)
			e := pool.Acquire(t)
			pool.Record(t, e, s)
			pool.Release(t, e)
			released.Open(t)
		})
		t2 := w.Go("T2", func(t *Thread) {
			s := rt.Current(t)
			released.Wait(t)
			e := pool.Acquire(t)
			x := &Buffer{Name: "x"}
			want := Stamp{Value: 7, By: "T2"}
			_ = rt.Op(t, s, Write(x, want))
			pool.Record(t, e, s)
			ch.Put(t, handoff{buf: x, want: want, event: e})
			pool.Query(t, e)
			pool.Synchronize(t, e)
		})
		t3 := w.Go("T3", func(t *Thread) {
			s := rt.Current(t)
			h := ch.Get(t)
			pool.WaitOn(t, h.event, s)
			_ = rt.Op(t, s, Read(h.buf, h.want))
			rt.SyncStream(t, s)
		})
		rt.SetStream(t1, 1)
		rt.SetStream(t2, 2)
		rt.SetStream(t3, 3)
	}
}

// EventLookupAfterError is getInUseEvent on an id that is not in use, then another event
// call from another thread: with ErrorUnderPoolMutex the pool mutex is never released and
// the second thread blocks for good (the first waits for it, as a program would before
// exiting).
func EventLookupAfterError(lookup EventLookup) Scenario {
	return func(w *World) {
		rt := NewRuntime(w, Options{Streams: 1})
		pool := NewEventPool(rt, MonotonicCounter, lookup)
		failed := NewLatch("lookup failed")
		finished := NewLatch("other thread finished")
		w.Go("T1", func(t *Thread) {
			if _, err := pool.Lookup(t, 99); !errors.Is(err, ErrUnknownEvent) {
				t.Fail("T1: lookup of an unknown event: got %v", err)
			}
			failed.Open(t)
			finished.Wait(t)
		})
		w.Go("T2", func(t *Thread) {
			failed.Wait(t)
			pool.Release(t, pool.Acquire(t))
			finished.Open(t)
		})
	}
}

// HeapConfig sizes the heap hand-over scenario.
type HeapConfig struct {
	Reuse HeapReuse
	IDs   IDCounter
	// Capacity is how many buffers the shared heaps hold (default 2). With 1, stream S
	// can only get memory back through the out-of-memory path.
	Capacity int
	// Trim makes S run the garbage collector before it allocates.
	Trim bool
	// Adversarial starves stream T (GPUPolicy.Starve): its pending read runs as late as
	// possible.
	Adversarial bool
}

// HeapHandover is a buffer freed by one stream and wanted by another (SPEC item 6).
// Thread T allocates x, writes it and waits for the write, encodes a read of x (a GPU
// read still pending), and frees x. Thread S then allocates, writes and reads its buffer.
// T's read must see T's value: if S was handed x while T's read was pending, T's read can
// observe S's value, a value written by a later owner. Counts: "reused-across-streams"
// when S took a buffer from T's free list, "s-got-x" when S's buffer is x, by whatever
// path (T's free list, or the heap after GC).
func HeapHandover(cfg HeapConfig) Scenario {
	capacity := cfg.Capacity
	if capacity == 0 {
		capacity = 2
	}
	return func(w *World) {
		const st, ss = 1, 2
		opts := Options{Streams: 3, Binding: PerThreadStreams}
		if cfg.Adversarial {
			opts.GPU.Starve = []int{st}
		}
		rt := NewRuntime(w, opts)
		alloc := NewAllocator(rt, cfg.Reuse, cfg.IDs, capacity)
		freed := NewLatch("T freed x")
		var x *Buffer
		tt := w.Go("T", func(t *Thread) {
			s := rt.Current(t)
			al, err := alloc.Malloc(t, s)
			if err != nil {
				t.Fail("T: %v", err)
				return
			}
			t.Do(func() { x = al.Buf })
			want := Stamp{Value: 1, Gen: al.Gen, By: "T"}
			_ = rt.Op(t, s, Write(al.Buf, want))
			rt.SyncStream(t, s)
			_ = rt.Op(t, s, Read(al.Buf, want))
			alloc.Free(t, s, al.Buf)
			freed.Open(t)
			rt.ThreadExit(t)
		})
		ts := w.Go("S", func(t *Thread) {
			s := rt.Current(t)
			freed.Wait(t)
			if cfg.Trim {
				alloc.Trim(t)
			}
			al, err := alloc.MallocOrReclaim(t, s, 1)
			if err != nil {
				t.Fail("S: %v", err)
				return
			}
			t.Do(func() {
				if al.Buf == x {
					w.Count("s-got-x")
				}
			})
			want := Stamp{Value: 2, Gen: al.Gen, By: "S"}
			_ = rt.Op(t, s, Write(al.Buf, want), Read(al.Buf, want))
			rt.SyncStream(t, s)
			rt.ThreadExit(t)
		})
		rt.SetStream(tt, st)
		rt.SetStream(ts, ss)
	}
}

// FirstCompile is n threads looking a graph key up twice each, all starting with an
// empty cache: the key must be compiled exactly once, never by two threads at once, and
// the second lookup (a thread-local hit) must take no lock.
func FirstCompile(variant CompileVariant, n int) Scenario {
	return func(w *World) {
		cache := NewGraphCache(variant, 4)
		for i := range n {
			w.Go(fmt.Sprintf("T%d", i), func(t *Thread) {
				local := NewLocalCache()
				first := cache.Lookup(t, local, "linear")
				again := cache.Lookup(t, local, "linear")
				if first != again {
					t.Fail("%s: the second lookup returned another executable", t.Name)
				}
			})
		}
	}
}

// SyncStress is workers encoding on their own streams (writes and reads of their own
// buffers, a per-stream synchronize every third iteration) while the main thread calls
// the device-wide synchronize again and again; each synchronize's postcondition is
// checked. Sized for Concurrent runs and random schedules.
func SyncStress(variant SyncVariant, workers, iters int) Scenario {
	return func(w *World) {
		rt := NewRuntime(w, Options{Streams: 1 + workers, Binding: PerThreadStreams, Sync: variant})
		for i := range workers {
			wt := w.Go(fmt.Sprintf("worker%d", i), func(t *Thread) {
				s := rt.Current(t)
				x := &Buffer{Name: fmt.Sprintf("w%d", i)}
				for j := range iters {
					v := Stamp{Value: j + 1, By: t.Name}
					_ = rt.Op(t, s, Write(x, v), Read(x, v))
					if j%3 == 2 {
						rt.SyncStream(t, s)
					}
				}
				rt.ThreadExit(t)
			})
			rt.SetStream(wt, 1+i)
		}
		w.Go("main", func(t *Thread) {
			for range max(iters/2, 1) {
				rt.DeviceSync(t)
			}
		})
	}
}

// HeapChurn is threads on their own streams allocating, writing, reading and freeing
// buffers, one in even iterations and two in odd ones, from heaps that hold threads+1:
// buffers move between streams through other streams' free lists, GC and the
// out-of-memory path. Every read checks that it saw its own allocation's value. With
// threads+1 buffers some thread can always get what it needs, so the run always ends.
func HeapChurn(reuse HeapReuse, threads, iters int) Scenario {
	return func(w *World) {
		rt := NewRuntime(w, Options{Streams: 1 + threads, Binding: PerThreadStreams})
		alloc := NewAllocator(rt, reuse, AtomicIDs, threads+1)
		for i := range threads {
			th := w.Go(fmt.Sprintf("T%d", i), func(t *Thread) {
				s := rt.Current(t)
				for j := range iters {
					var held []*Buffer
					for k := range 1 + j%2 {
						al, err := alloc.MallocOrReclaim(t, s, -1)
						if err != nil {
							t.Fail("%s: %v", t.Name, err)
							return
						}
						v := Stamp{Value: 1000*(i+1) + 10*j + k, Gen: al.Gen, By: t.Name}
						_ = rt.Op(t, s, Write(al.Buf, v))
						if j%3 == 0 {
							rt.SyncStream(t, s)
						}
						_ = rt.Op(t, s, Read(al.Buf, v))
						held = append(held, al.Buf)
					}
					for _, b := range held {
						alloc.Free(t, s, b)
					}
				}
				rt.ThreadExit(t)
			})
			rt.SetStream(th, 1+i)
		}
	}
}
