// MPS003 and MPS004 fixtures.
#include "Stream.h"

namespace demo {

id<MTLCommandBuffer> Stream::commandBuffer() {
  if (!_commandBuffer) {
    _commandBuffer = [_commandQueue commandBuffer];
  }
  return _commandBuffer;
}

id<MTLComputeCommandEncoder> Stream::commandEncoder() {
  if (_commandEncoder == nil)
    _commandEncoder = [commandBuffer() computeCommandEncoder];
  return _commandEncoder;
}

id<MTLCommandBuffer> Stream::commandBufferLocked() {
  std::lock_guard<std::recursive_mutex> lock(_streamMutex);
  if (!_commandBuffer) {
    _commandBuffer = [_commandQueue commandBuffer];
  }
  return _commandBuffer;
}

void Stream::synchronize(int how) {
  endKernelCoalescing();
  if (how > 0) {
    commit();
  }
}

void Stream::fill(int value) {
  dispatch_sync(_serialQueue, ^() {
    endKernelCoalescing();
    [commandBuffer() enqueue];
    synchronize(value);
  });
}

void encodeSomething(Stream* stream) {
  id<MTLComputeCommandEncoder> enc = stream->commandEncoder();
  [enc setBytes:nullptr length:0 atIndex:0];
  stream->synchronize(1);
}

void encodeOnQueue(Stream* stream) {
  dispatch_sync_with_rethrow(stream->queue(), ^() {
    id<MTLComputeCommandEncoder> enc = stream->commandEncoder();
    [enc commit];
  });
}

void encodeUnderLock(Stream* stream, std::mutex& m) {
  std::scoped_lock lock(m);
  stream->endKernelCoalescing();
}

void deviceSynchronize() {
  getDefaultMPSStream()->synchronize(2);
}

void commitDefault() {
  getDefaultMPSStream()->synchronize(1);
}

void currentSync() {
  getCurrentMPSStream()->synchronize(2);
}

dispatch_queue_t defaultQueue() {
  return getDefaultMPSStream()->queue();
}

} // namespace demo

// By convention the caller of a *Locked function holds the lock: not findings.
void recordLocked(Stream* stream) {
  stream->endKernelCoalescing();
}
