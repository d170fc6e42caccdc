package probe

import "errors"

// ErrUnsupported is returned by Open where there is no Metal: any OS but macOS, or a Mac
// whose system reports no Metal device.
var ErrUnsupported = errors.New("the Metal probe needs macOS on Apple silicon; nothing was run")

// DeviceInfo describes the GPU a probe child ran on.
type DeviceInfo struct {
	// Backend is "metal" for the real device and "fake" for the in-memory test double.
	Backend string `json:"backend"`
	// Name is the device name Metal reports, for example "Apple M2 Pro".
	Name string `json:"name"`
	// OS is NSProcessInfo's operatingSystemVersionString, for example
	// "Version 15.1 (Build 24B83)".
	OS string `json:"os"`
	// Families lists the GPU families the device supports (supportsFamily:), oldest first,
	// for example ["apple7", "apple8", "mac2", "metal3"].
	Families []string `json:"families"`
	// RecommendedMaxWorkingSetSize is the memory budget Metal recommends, in bytes.
	RecommendedMaxWorkingSetSize uint64 `json:"recommended_max_working_set_size"`
	// UnifiedMemory is true where CPU and GPU share memory (every Apple silicon Mac).
	UnifiedMemory bool `json:"unified_memory"`
}

// Params are the constants one dispatch of the probe kernel receives. The layout matches
// the Params struct in kernelSource: three 32-bit unsigned integers, no padding.
type Params struct {
	Worker    uint32
	Iteration uint32
	Count     uint32
}

// Backend is everything the probe needs from a GPU API. The darwin implementation calls
// Metal through purego; Fake implements it in memory so that the scheduler, the checks and
// the child protocol run on any OS.
//
// Methods may be called from several OS threads at once; that is the point of the probe.
// A backend that detects misuse the way Metal's validation layer does (a handler added
// after commit, encoding into a committed command buffer) aborts the process with a
// "failed assertion" message rather than returning an error.
type Backend interface {
	// Device describes the GPU.
	Device() (DeviceInfo, error)
	// NewQueue creates a command queue.
	NewQueue() (Queue, error)
	// NewBuffer creates a buffer of words 32-bit words shared between CPU and GPU.
	NewBuffer(words int) (Buffer, error)
	// Compile builds function from Metal shading language source into a compute pipeline.
	Compile(source, function string) (Pipeline, error)
	// Pool opens an autorelease pool on the calling thread and returns the function that
	// drains it. Every probe iteration runs inside one.
	Pool() (drain func())
	// Close releases the device.
	Close() error
}

// Queue is a command queue (MTLCommandQueue).
type Queue interface {
	// CommandBuffer creates a new command buffer on the queue.
	CommandBuffer() (CommandBuffer, error)
	Release()
}

// Pipeline is a compiled compute kernel (MTLComputePipelineState).
type Pipeline interface {
	Release()
}

// Buffer is GPU-visible memory (MTLBuffer with shared storage).
type Buffer interface {
	// Words is the length in 32-bit words.
	Words() int
	// Read copies the buffer's contents into dst (len(dst) <= Words()).
	Read(dst []uint32)
	Release()
}

// CommandBuffer is one MTLCommandBuffer.
type CommandBuffer interface {
	// Dispatch encodes one compute pass: pipeline p over params.Count threads writing out.
	Dispatch(p Pipeline, out Buffer, params Params) error
	// AddCompletedHandler registers fn to run once the GPU has finished the buffer. Metal
	// requires this before Commit.
	AddCompletedHandler(fn func()) error
	// Commit submits the buffer to its queue.
	Commit() error
	// Wait blocks until the buffer completed and returns the error it completed with.
	Wait() error
	Release()
}
