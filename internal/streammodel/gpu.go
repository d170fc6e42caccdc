package streammodel

import "fmt"

// A Stamp is what a GPU write leaves in a buffer: a value, the allocation generation of
// the buffer it was written for, and who wrote it.
type Stamp struct {
	Value int
	Gen   int
	By    string
}

func (s Stamp) String() string {
	if s == (Stamp{}) {
		return "nothing (the buffer's initial contents)"
	}
	return fmt.Sprintf("%d (allocation %d, by %s)", s.Value, s.Gen, s.By)
}

// A Buffer is an MTLBuffer: GPU memory that commands read and write. Its allocation
// generation grows each time the allocator hands it out again, so a read can tell a value
// written for its own allocation from one written by a later owner.
type Buffer struct {
	Name string
	mem  Stamp
	gen  int
}

// Gen is the buffer's current allocation generation.
func (b *Buffer) Gen() int { return b.gen }

// A SharedEvent is an MTLSharedEvent. Its signaledValue only grows: Apple documents that
// setting it changes it only to a larger value, and the model assumes the same of a GPU
// signal (encodeSignalEvent:value:).
type SharedEvent struct {
	Name  string
	value uint64
}

func (e *SharedEvent) raise(v uint64) {
	if v > e.value {
		e.value = v
	}
}

type cmdKind int

const (
	cmdWrite cmdKind = iota
	cmdRead
	cmdSignal
	cmdWait
)

// A Command is one GPU command in a command buffer: a kernel or blit that writes or reads
// a buffer, an encodeSignalEvent, or an encodeWaitForEvent.
type Command struct {
	kind   cmdKind
	stream int
	serial uint64 // the stream's encode serial of this command
	buf    *Buffer
	stamp  Stamp // written (cmdWrite) or expected (cmdRead)
	event  *SharedEvent
	value  uint64
	done   bool
	seen   Stamp
}

// Write is a command that writes s into b.
func Write(b *Buffer, s Stamp) *Command { return &Command{kind: cmdWrite, buf: b, stamp: s} }

// Read is a command that reads b and requires it to hold want when the GPU runs it: a
// read that observes anything else is a violation (a consumer that read before the
// producer's write, or a value written by a later owner of the memory).
func Read(b *Buffer, want Stamp) *Command { return &Command{kind: cmdRead, buf: b, stamp: want} }

// Done reports whether the GPU ran the command. Call it inside an action.
func (c *Command) Done() bool { return c.done }

// Serial is the encode serial the stream gave the command.
func (c *Command) Serial() uint64 { return c.serial }

func (c *Command) describe() string {
	switch c.kind {
	case cmdWrite:
		return "write " + c.buf.Name
	case cmdRead:
		return "read " + c.buf.Name
	case cmdSignal:
		return fmt.Sprintf("signal %s=%d", c.event.Name, c.value)
	default:
		return fmt.Sprintf("wait %s>=%d", c.event.Name, c.value)
	}
}

// A CommandBuffer is an MTLCommandBuffer: commands encoded on one stream, committed to
// its queue as a unit, run by the GPU in order after the stream's earlier buffers.
type CommandBuffer struct {
	Stream     int
	Seq        int
	cmds       []*Command
	committed  bool
	completed  bool
	lastSerial uint64
}

// Completed reports whether the GPU finished the buffer. Call it inside an action.
func (cb *CommandBuffer) Completed() bool { return cb.completed }

type gpuQueue struct {
	id        int
	cbs       []*CommandBuffer
	head      int
	next      int
	completed uint64 // encode serial of the last command of the last completed buffer
}

func (q *gpuQueue) nextCommand() *Command {
	if q.head >= len(q.cbs) {
		return nil
	}
	return q.cbs[q.head].cmds[q.next]
}

// GPUPolicy is how a Controlled test steers the simulated GPU. The zero policy lets the
// chooser pick any ready stream at any step, so an exploration covers every order in
// which the GPU can run the streams' work.
type GPUPolicy struct {
	// Starve lists streams that the GPU runs only as a last resort, in this order: a
	// starved stream's next command runs only when no other stream is ready, no
	// non-daemon thread can take a step, and no stream earlier in the list is ready. This
	// is the adversarial GPU: the producer's work lands as late as it possibly can without
	// a deadlock the protocol did not cause.
	Starve []int
	// Hold, when set, is asked for each stream before its next command runs; true keeps
	// the stream waiting. A test uses it to say exactly when the GPU completes a buffer
	// (after the other thread has encoded k more operations, say).
	Hold func(stream int) bool
}

// The GPU runs committed command buffers asynchronously, on its own (daemon) thread:
// each step runs the next command of one ready stream, in order within a stream and in any
// order across streams. A buffer completes when its last command has run; completedSerial
// then moves to that command's serial, as a completion handler would record it.
type GPU struct {
	w      *World
	queues []*gpuQueue
	policy GPUPolicy
	seq    int
}

// NewGPU adds the simulated GPU, with one hardware queue per stream, to the world.
func NewGPU(w *World, streams int, policy GPUPolicy) *GPU {
	if w.mode == Concurrent && len(policy.Starve) > 0 {
		panic("streammodel: GPUPolicy.Starve needs a Controlled world")
	}
	g := &GPU{w: w, policy: policy}
	for i := range streams {
		g.queues = append(g.queues, &gpuQueue{id: i})
	}
	w.spawn("gpu", true, g.loop)
	return g
}

// submit appends a committed buffer to its stream's hardware queue. Call it inside an
// action.
func (g *GPU) submit(cb *CommandBuffer) {
	g.seq++
	cb.Seq = g.seq
	cb.committed = true
	q := g.queues[cb.Stream]
	q.cbs = append(q.cbs, cb)
}

// CompletedSerial is the encode serial up to which the stream's work has completed. Call
// it inside an action.
func (g *GPU) CompletedSerial(stream int) uint64 { return g.queues[stream].completed }

func (g *GPU) canStep(q *gpuQueue) bool {
	c := q.nextCommand()
	if c == nil {
		return false
	}
	if c.kind == cmdWait && c.event.value < c.value {
		return false
	}
	if g.policy.Hold != nil && g.policy.Hold(q.id) {
		return false
	}
	return true
}

func (g *GPU) starveRank(stream int) int {
	for i, s := range g.policy.Starve {
		if s == stream {
			return i
		}
	}
	return -1
}

// ready lists the streams whose next command may run now, under the policy.
func (g *GPU) ready() []*gpuQueue {
	var normal []*gpuQueue
	var starved *gpuQueue
	starvedRank := -1
	for _, q := range g.queues {
		if !g.canStep(q) {
			continue
		}
		r := g.starveRank(q.id)
		if r < 0 {
			normal = append(normal, q)
		} else if starved == nil || r < starvedRank {
			starved, starvedRank = q, r
		}
	}
	if len(normal) > 0 {
		return normal
	}
	if starved != nil && g.w.cpuBlocked {
		return []*gpuQueue{starved}
	}
	return nil
}

func (g *GPU) loop(t *Thread) {
	for {
		exit := false
		t.await("run", func() bool {
			return g.w.liveCPU == 0 || len(g.ready()) > 0
		}, func() {
			r := g.ready()
			if len(r) == 0 {
				exit = true
				return
			}
			g.step(r[t.Choose(len(r))])
		})
		if exit {
			return
		}
	}
}

func (g *GPU) step(q *gpuQueue) {
	cb := q.cbs[q.head]
	c := cb.cmds[q.next]
	switch c.kind {
	case cmdWrite:
		c.buf.mem = c.stamp
	case cmdRead:
		c.seen = c.buf.mem
		if c.seen != c.stamp {
			why := "a stale value"
			switch {
			case c.seen == (Stamp{}):
				why = "memory no one had written yet"
			case c.seen.Gen > c.stamp.Gen:
				why = "a value written by a later owner of the memory"
			}
			g.w.Violatef("stream %d read %s and saw %s, expected %s: it observed %s",
				q.id, c.buf.Name, c.seen, c.stamp, why)
		}
	case cmdSignal:
		c.event.raise(c.value)
	case cmdWait:
	}
	c.done = true
	q.next++
	if q.next == len(cb.cmds) {
		cb.completed = true
		q.completed = cb.lastSerial
		q.head++
		q.next = 0
	}
}
