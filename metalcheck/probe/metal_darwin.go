package probe

import (
	// crypto/x509 makes the binary link CoreFoundation at load time (through
	// crypto/x509/internal/macos), so CoreFoundation has registered the block classes
	// before purego's objc package, in its init, looks up __NSMallocBlock__ for the blocks
	// it builds. Loading Foundation later, in loadMetal, would be too late for that.
	_ "crypto/x509"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
	"github.com/ebitengine/purego/objc"
)

// This file is the only place the probe touches Metal. It calls the Objective-C runtime
// through purego (no cgo), so it builds with CGO_ENABLED=0 and cross-compiles from Linux.
//
// NOT RUN: no Mac exists among this project's machines. The file is compiled and vetted for
// darwin/arm64 in CI; every call in it follows Apple's documented Metal API, but it has
// never been executed. docs/probe.md says so too.

const (
	metalFramework        = "/System/Library/Frameworks/Metal.framework/Metal"
	foundationFramework   = "/System/Library/Frameworks/Foundation.framework/Foundation"
	coreGraphicsFramework = "/System/Library/Frameworks/CoreGraphics.framework/CoreGraphics"
	libobjc               = "/usr/lib/libobjc.A.dylib"

	// MTLResourceStorageModeShared: CPU and GPU see the same memory.
	mtlResourceStorageModeShared = 0
	// MTLCommandBufferStatusError.
	mtlCommandBufferStatusError = 5
)

// mtlSize mirrors MTLSize: three NSUInteger.
type mtlSize struct {
	Width, Height, Depth uint64
}

// gpuFamilies are the MTLGPUFamily values the probe asks about, oldest first.
var gpuFamilies = []struct {
	name string
	code int
}{
	{"apple1", 1001}, {"apple2", 1002}, {"apple3", 1003}, {"apple4", 1004}, {"apple5", 1005},
	{"apple6", 1006}, {"apple7", 1007}, {"apple8", 1008}, {"apple9", 1009}, {"apple10", 1010},
	{"mac2", 2002}, {"common1", 3001}, {"common2", 3002}, {"common3", 3003},
	{"metal3", 5001}, {"metal4", 5002},
}

// Selectors, registered once by loadMetal.
var (
	selAlloc, selInitWithUTF8String, selUTF8String, selRelease, selRetain         objc.SEL
	selRespondsToSelector, selLocalizedDescription                                objc.SEL
	selProcessInfo, selOperatingSystemVersionString                               objc.SEL
	selName, selSupportsFamily, selRecommendedMaxWorkingSetSize                   objc.SEL
	selHasUnifiedMemory, selNewCommandQueue, selNewBufferWithLengthOptions        objc.SEL
	selContents, selNewLibraryWithSourceOptionsError, selNewFunctionWithName      objc.SEL
	selNewComputePipelineStateWithFunctionError, selMaxTotalThreadsPerThreadgroup objc.SEL
	selCommandBuffer, selComputeCommandEncoder, selSetComputePipelineState        objc.SEL
	selSetBufferOffsetAtIndex, selSetBytesLengthAtIndex                           objc.SEL
	selDispatchThreadsThreadsPerThreadgroup, selEndEncoding                       objc.SEL
	selAddCompletedHandler, selCommit, selWaitUntilCompleted, selStatus, selError objc.SEL

	classNSString, classNSProcessInfo objc.ID

	createSystemDefaultDevice func() objc.ID
	autoreleasePoolPush       func() uintptr
	autoreleasePoolPop        func(uintptr)

	loadOnce sync.Once
	loadErr  error
)

func loadMetal() error {
	loadOnce.Do(func() {
		for _, path := range []string{foundationFramework, coreGraphicsFramework} {
			// CoreGraphics must be loaded for a command-line process to get a default device.
			if _, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_GLOBAL); err != nil {
				loadErr = fmt.Errorf("load %s: %w", path, err)
				return
			}
		}
		metal, err := purego.Dlopen(metalFramework, purego.RTLD_NOW|purego.RTLD_GLOBAL)
		if err != nil {
			loadErr = fmt.Errorf("load %s: %w (%w)", metalFramework, err, ErrUnsupported)
			return
		}
		objcLib, err := purego.Dlopen(libobjc, purego.RTLD_NOW|purego.RTLD_GLOBAL)
		if err != nil {
			loadErr = fmt.Errorf("load %s: %w", libobjc, err)
			return
		}
		purego.RegisterLibFunc(&createSystemDefaultDevice, metal, "MTLCreateSystemDefaultDevice")
		purego.RegisterLibFunc(&autoreleasePoolPush, objcLib, "objc_autoreleasePoolPush")
		purego.RegisterLibFunc(&autoreleasePoolPop, objcLib, "objc_autoreleasePoolPop")

		for p, name := range map[*objc.SEL]string{
			&selAlloc: "alloc", &selInitWithUTF8String: "initWithUTF8String:", &selUTF8String: "UTF8String",
			&selRelease: "release", &selRetain: "retain", &selRespondsToSelector: "respondsToSelector:",
			&selLocalizedDescription: "localizedDescription", &selProcessInfo: "processInfo",
			&selOperatingSystemVersionString: "operatingSystemVersionString", &selName: "name",
			&selSupportsFamily: "supportsFamily:", &selRecommendedMaxWorkingSetSize: "recommendedMaxWorkingSetSize",
			&selHasUnifiedMemory: "hasUnifiedMemory", &selNewCommandQueue: "newCommandQueue",
			&selNewBufferWithLengthOptions: "newBufferWithLength:options:", &selContents: "contents",
			&selNewLibraryWithSourceOptionsError:         "newLibraryWithSource:options:error:",
			&selNewFunctionWithName:                      "newFunctionWithName:",
			&selNewComputePipelineStateWithFunctionError: "newComputePipelineStateWithFunction:error:",
			&selMaxTotalThreadsPerThreadgroup:            "maxTotalThreadsPerThreadgroup",
			&selCommandBuffer:                            "commandBuffer", &selComputeCommandEncoder: "computeCommandEncoder",
			&selSetComputePipelineState: "setComputePipelineState:", &selSetBufferOffsetAtIndex: "setBuffer:offset:atIndex:",
			&selSetBytesLengthAtIndex:                "setBytes:length:atIndex:",
			&selDispatchThreadsThreadsPerThreadgroup: "dispatchThreads:threadsPerThreadgroup:",
			&selEndEncoding:                          "endEncoding", &selAddCompletedHandler: "addCompletedHandler:",
			&selCommit: "commit", &selWaitUntilCompleted: "waitUntilCompleted", &selStatus: "status", &selError: "error",
		} {
			*p = objc.RegisterName(name)
		}
		classNSString = objc.ID(objc.GetClass("NSString"))
		classNSProcessInfo = objc.ID(objc.GetClass("NSProcessInfo"))
		if classNSString == 0 || classNSProcessInfo == 0 {
			loadErr = errors.New("load Foundation: NSString or NSProcessInfo class missing")
		}
	})
	return loadErr
}

// newString returns a +1 NSString; release it.
func newString(s string) objc.ID {
	return classNSString.Send(selAlloc).Send(selInitWithUTF8String, s)
}

// goString copies an NSString into Go.
func goString(id objc.ID) string {
	if id == 0 {
		return ""
	}
	return objc.Send[string](id, selUTF8String)
}

func release(id objc.ID) {
	if id != 0 {
		id.Send(selRelease)
	}
}

// describe renders an NSError.
func describe(nsErr objc.ID) string {
	if nsErr == 0 {
		return "no error description"
	}
	return goString(nsErr.Send(selLocalizedDescription))
}

type metalBackend struct {
	device objc.ID
}

func openMetal() (Backend, error) {
	if err := loadMetal(); err != nil {
		return nil, err
	}
	dev := createSystemDefaultDevice()
	if dev == 0 {
		return nil, fmt.Errorf("MTLCreateSystemDefaultDevice returned nil: this Mac reports no Metal device (%w)", ErrUnsupported)
	}
	return &metalBackend{device: dev}, nil
}

func (m *metalBackend) Pool() func() {
	token := autoreleasePoolPush()
	return func() { autoreleasePoolPop(token) }
}

func (m *metalBackend) Close() error {
	release(m.device)
	m.device = 0
	return nil
}

func (m *metalBackend) Device() (DeviceInfo, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	drain := m.Pool()
	defer drain()
	info := DeviceInfo{
		Backend:                      "metal",
		Name:                         goString(m.device.Send(selName)),
		RecommendedMaxWorkingSetSize: objc.Send[uint64](m.device, selRecommendedMaxWorkingSetSize),
		UnifiedMemory:                objc.Send[bool](m.device, selHasUnifiedMemory),
		OS:                           goString(classNSProcessInfo.Send(selProcessInfo).Send(selOperatingSystemVersionString)),
	}
	if objc.Send[bool](m.device, selRespondsToSelector, selSupportsFamily) {
		for _, f := range gpuFamilies {
			if objc.Send[bool](m.device, selSupportsFamily, f.code) {
				info.Families = append(info.Families, f.name)
			}
		}
	}
	return info, nil
}

func (m *metalBackend) NewQueue() (Queue, error) {
	q := m.device.Send(selNewCommandQueue)
	if q == 0 {
		return nil, errors.New("newCommandQueue returned nil")
	}
	return &metalQueue{id: q}, nil
}

func (m *metalBackend) NewBuffer(words int) (Buffer, error) {
	if words < 1 {
		return nil, fmt.Errorf("buffer of %d words", words)
	}
	b := m.device.Send(selNewBufferWithLengthOptions, uint64(words)*4, uint64(mtlResourceStorageModeShared))
	if b == 0 {
		return nil, fmt.Errorf("newBufferWithLength:%d options:shared returned nil", words*4)
	}
	return &metalBuffer{id: b, words: words}, nil
}

func (m *metalBackend) Compile(source, function string) (Pipeline, error) {
	src := newString(source)
	defer release(src)
	var libErr objc.ID
	lib := m.device.Send(selNewLibraryWithSourceOptionsError, src, objc.ID(0), unsafe.Pointer(&libErr))
	if lib == 0 {
		return nil, fmt.Errorf("newLibraryWithSource: %s", describe(libErr))
	}
	defer release(lib)
	name := newString(function)
	defer release(name)
	fn := lib.Send(selNewFunctionWithName, name)
	if fn == 0 {
		return nil, fmt.Errorf("newFunctionWithName:%q returned nil", function)
	}
	defer release(fn)
	var psoErr objc.ID
	pso := m.device.Send(selNewComputePipelineStateWithFunctionError, fn, unsafe.Pointer(&psoErr))
	if pso == 0 {
		return nil, fmt.Errorf("newComputePipelineStateWithFunction: %s", describe(psoErr))
	}
	return &metalPipeline{id: pso, maxThreads: objc.Send[uint64](pso, selMaxTotalThreadsPerThreadgroup)}, nil
}

type metalQueue struct{ id objc.ID }

func (q *metalQueue) Release() { release(q.id) }

func (q *metalQueue) CommandBuffer() (CommandBuffer, error) {
	cb := q.id.Send(selCommandBuffer) // autoreleased; keep our own reference
	if cb == 0 {
		return nil, errors.New("commandBuffer returned nil")
	}
	cb.Send(selRetain)
	return &metalCommandBuffer{id: cb}, nil
}

type metalPipeline struct {
	id         objc.ID
	maxThreads uint64
}

func (p *metalPipeline) Release() { release(p.id) }

type metalBuffer struct {
	id    objc.ID
	words int
}

func (b *metalBuffer) Words() int { return b.words }

func (b *metalBuffer) Read(dst []uint32) {
	ptr := objc.Send[unsafe.Pointer](b.id, selContents)
	if ptr == nil {
		return
	}
	copy(dst, unsafe.Slice((*uint32)(ptr), b.words))
}

func (b *metalBuffer) Release() { release(b.id) }

type metalCommandBuffer struct{ id objc.ID }

func (c *metalCommandBuffer) Release() { release(c.id) }

func (c *metalCommandBuffer) Dispatch(p Pipeline, out Buffer, params Params) error {
	mp, ok := p.(*metalPipeline)
	if !ok {
		return fmt.Errorf("dispatch of a %T, not a Metal pipeline", p)
	}
	mb, ok := out.(*metalBuffer)
	if !ok {
		return fmt.Errorf("dispatch into a %T, not a Metal buffer", out)
	}
	enc := c.id.Send(selComputeCommandEncoder) // autoreleased
	if enc == 0 {
		return errors.New("computeCommandEncoder returned nil")
	}
	enc.Send(selSetComputePipelineState, mp.id)
	enc.Send(selSetBufferOffsetAtIndex, mb.id, uint64(0), uint64(0))
	enc.Send(selSetBytesLengthAtIndex, unsafe.Pointer(&params), uint64(unsafe.Sizeof(params)), uint64(1))
	group := min(uint64(256), max(mp.maxThreads, 1), uint64(max(params.Count, 1)))
	enc.Send(selDispatchThreadsThreadsPerThreadgroup,
		mtlSize{Width: uint64(params.Count), Height: 1, Depth: 1},
		mtlSize{Width: group, Height: 1, Depth: 1})
	enc.Send(selEndEncoding)
	runtime.KeepAlive(&params)
	return nil
}

func (c *metalCommandBuffer) AddCompletedHandler(fn func()) error {
	// MTLCommandBufferHandler is void (^)(id<MTLCommandBuffer>). Metal copies the block;
	// our reference is dropped right after, and purego forgets fn when Metal disposes it.
	blk := objc.NewBlock(func(_ objc.Block, _ objc.ID) { fn() })
	c.id.Send(selAddCompletedHandler, blk)
	blk.Release()
	return nil
}

func (c *metalCommandBuffer) Commit() error {
	c.id.Send(selCommit)
	return nil
}

func (c *metalCommandBuffer) Wait() error {
	c.id.Send(selWaitUntilCompleted)
	if objc.Send[uint64](c.id, selStatus) == mtlCommandBufferStatusError {
		return fmt.Errorf("command buffer status error: %s", describe(c.id.Send(selError)))
	}
	return nil
}
