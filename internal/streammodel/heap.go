package streammodel

import (
	"errors"
	"fmt"
)

// HeapReuse is when a buffer freed on one stream may be handed to another.
type HeapReuse int

const (
	// ReuseAfterCompletion is SPEC item 6: a buffer freed by stream T goes to T's free
	// list; T reuses it at once (its work runs in order), another stream S only once T's
	// completed serial has reached the serial T had encoded when it freed the buffer. GC
	// (Trim) returns only such completed buffers to the shared heap.
	ReuseAfterCompletion HeapReuse = iota
	// ReuseImmediately (broken): another stream takes a buffer from T's free list at once,
	// while T's GPU work on it may still be pending.
	ReuseImmediately
	// TrimIgnoresCompletion (broken): GC moves every free buffer of every stream back to
	// the shared heap without asking whether the freeing stream's work completed.
	TrimIgnoresCompletion
)

func (r HeapReuse) String() string {
	return [...]string{"reuse-after-completion", "reuse-immediately", "trim-ignores-completion"}[r]
}

// IDCounter is how buffer ids are counted.
type IDCounter int

const (
	// AtomicIDs: the id counter is std::atomic (SPEC item 6).
	AtomicIDs IDCounter = iota
	// IDsUnderStreamLock (broken, 0014): a plain counter bumped under the caller's
	// per-stream pool lock, so two streams bump it under two different locks.
	IDsUnderStreamLock
)

func (c IDCounter) String() string {
	return [...]string{"atomic-ids", "ids-under-stream-lock"}[c]
}

// ErrOutOfMemory is the allocator's answer when no buffer can be found or made.
var ErrOutOfMemory = errors.New("out of memory")

type freedBlock struct {
	buf    *Buffer
	serial uint64 // the freeing stream's encode serial at the free
}

type freeList struct {
	mu     *Mutex
	blocks []freedBlock
}

// An Allocator is MPSHeapAllocatorImpl as SPEC item 6 shapes it: heaps shared by every
// stream under one lock (creation and growth), free lists per stream, each under its own
// lock. Capacity is the number of buffers the heaps can hold.
type Allocator struct {
	rt       *Runtime
	reuse    HeapReuse
	ids      IDCounter
	capacity int

	heapMu   *Mutex
	heapFree []*Buffer
	heapMade int
	lists    []*freeList

	atomicID uint64
	plainID  SharedVar
}

// An Allocation is a buffer handed out, with the generation it was handed out as.
type Allocation struct {
	Buf *Buffer
	Gen int
}

// NewAllocator makes an allocator with one free list per stream of rt.
func NewAllocator(rt *Runtime, reuse HeapReuse, ids IDCounter, capacity int) *Allocator {
	a := &Allocator{rt: rt, reuse: reuse, ids: ids, capacity: capacity,
		heapMu: NewMutex("heap lock", false), plainID: SharedVar{Name: "buffer id counter"}}
	for i := range rt.Streams {
		a.lists = append(a.lists, &freeList{mu: NewMutex(fmt.Sprintf("pool lock %d", i), true)})
	}
	return a
}

func (a *Allocator) completed(s int, b freedBlock) bool {
	return a.rt.GPU.CompletedSerial(s) >= b.serial
}

// Malloc is malloc() on stream s: the stream's own free list first (reuse at once: the
// stream's work is in order), then other streams' free lists (only completed buffers,
// under ReuseAfterCompletion), then the shared heap. It never holds two free-list locks.
func (a *Allocator) Malloc(t *Thread, s *Stream) (Allocation, error) {
	var buf *Buffer
	own := a.lists[s.ID]
	own.mu.Lock(t)
	t.Do(func() {
		if n := len(own.blocks); n > 0 {
			buf = own.blocks[n-1].buf
			own.blocks = own.blocks[:n-1]
		}
	})
	own.mu.Unlock(t)
	for i, l := range a.lists {
		if buf != nil {
			break
		}
		if i == s.ID {
			continue
		}
		l.mu.Lock(t)
		t.Do(func() {
			for j, b := range l.blocks {
				if a.reuse == ReuseImmediately || a.completed(i, b) {
					buf = b.buf
					l.blocks = append(l.blocks[:j], l.blocks[j+1:]...)
					t.w.Count("reused-across-streams")
					return
				}
			}
		})
		l.mu.Unlock(t)
	}
	if buf == nil {
		a.heapMu.Lock(t)
		t.Do(func() {
			if n := len(a.heapFree); n > 0 {
				buf = a.heapFree[n-1]
				a.heapFree = a.heapFree[:n-1]
			} else if a.heapMade < a.capacity {
				a.heapMade++
				buf = &Buffer{Name: fmt.Sprintf("buf%d", a.heapMade)}
			}
		})
		a.heapMu.Unlock(t)
	}
	if buf == nil {
		return Allocation{}, fmt.Errorf("malloc on %s: %w", s, ErrOutOfMemory)
	}
	switch a.ids {
	case AtomicIDs:
		t.Do(func() { a.atomicID++ })
	case IDsUnderStreamLock:
		own.mu.Lock(t)
		a.plainID.Add(t, 1)
		own.mu.Unlock(t)
	}
	var al Allocation
	t.Do(func() {
		buf.gen++
		al = Allocation{Buf: buf, Gen: buf.gen}
	})
	return al, nil
}

// Free is free() on stream s: the buffer goes to s's free list, stamped with the encode
// serial s has reached (all of s's work that may use it).
func (a *Allocator) Free(t *Thread, s *Stream, b *Buffer) {
	var serial uint64
	s.Mu.Lock(t)
	t.Do(func() { serial = s.serial })
	s.Mu.Unlock(t)
	l := a.lists[s.ID]
	l.mu.Lock(t)
	t.Do(func() { l.blocks = append(l.blocks, freedBlock{buf: b, serial: serial}) })
	l.mu.Unlock(t)
}

// Trim is the garbage collector's pass over every stream's free list, each under its own
// lock and without a device-wide synchronize: idle buffers go back to the shared heap.
func (a *Allocator) Trim(t *Thread) {
	for i, l := range a.lists {
		var idle []*Buffer
		l.mu.Lock(t)
		t.Do(func() {
			kept := l.blocks[:0]
			for _, b := range l.blocks {
				if a.reuse == TrimIgnoresCompletion || a.completed(i, b) {
					idle = append(idle, b.buf)
				} else {
					kept = append(kept, b)
				}
			}
			l.blocks = kept
		})
		l.mu.Unlock(t)
		if len(idle) == 0 {
			continue
		}
		a.heapMu.Lock(t)
		t.Do(func() { a.heapFree = append(a.heapFree, idle...) })
		a.heapMu.Unlock(t)
	}
}

// MallocOrReclaim is malloc() with the out-of-memory path of a caller outside any
// stream's block: on failure, release_cached_buffers (a device-wide synchronize, then GC)
// and try again, up to tries times (without end when tries is negative).
func (a *Allocator) MallocOrReclaim(t *Thread, s *Stream, tries int) (Allocation, error) {
	for i := 0; ; i++ {
		al, err := a.Malloc(t, s)
		if err == nil || (tries >= 0 && i >= tries) {
			return al, err
		}
		t.Note("out-of-memory-reclaim")
		a.rt.DeviceSync(t)
		a.Trim(t)
	}
}
