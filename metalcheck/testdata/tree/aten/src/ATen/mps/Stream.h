// A small stream class in the shape of MPSStream (written for these tests).
#pragma once
#include <mutex>
#import <Metal/Metal.h>

namespace demo {

class Stream {
 public:
  id<MTLCommandBuffer> commandBuffer();
  id<MTLComputeCommandEncoder> commandEncoder();
  id<MTLCommandBuffer> commandBufferLocked();
  void synchronize(int how);
  void commit();
  void endKernelCoalescing();
  void fill(int value);
  dispatch_queue_t queue() const { return _serialQueue; }

 private:
  id<MTLCommandQueue> _commandQueue = nil;
  id<MTLCommandBuffer> _commandBuffer = nil;
  id<MTLComputeCommandEncoder> _commandEncoder = nil;
  dispatch_queue_t _serialQueue = nullptr;
  std::recursive_mutex _streamMutex;
};

Stream* getDefaultStream();
Stream* getCurrentMPSStream();
Stream* getDefaultMPSStream();

} // namespace demo
