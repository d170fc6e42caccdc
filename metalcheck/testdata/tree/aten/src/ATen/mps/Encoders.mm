// MPS013 fixtures: encoders and command buffers fetched off the stream's queue.
#include "Stream.h"

namespace demo {

void encodeFetchedEarly(Stream* stream) {
  id<MTLComputeCommandEncoder> encoder = stream->commandEncoder();
  dispatch_sync(stream->queue(), ^() {
    [encoder setBytes:nullptr length:0 atIndex:0];
  });
}

void commitLater(Stream* stream) {
  id<MTLCommandBuffer> buffer;
  buffer = stream->commandBuffer();
  dispatch_async(stream->queue(), ^() {
    [buffer commit];
  });
}

void blitFetchedEarly(Stream* stream) {
  auto blit = [stream->commandBuffer() blitCommandEncoder];
  dispatch_sync(stream->queue(), ^() {
    [blit endEncoding];
  });
}

id<MTLCommandBuffer> currentCommandBuffer() {
  return getCurrentMPSStream()->commandBuffer();
}

// Clean: fetched inside the block; fetched and used off any block (another rule's
// business); returned by a helper whose only caller runs on the queue.
void encodeOnTheQueue(Stream* stream) {
  dispatch_sync(stream->queue(), ^() {
    id<MTLComputeCommandEncoder> encoder = stream->commandEncoder();
    [encoder setBytes:nullptr length:0 atIndex:0];
    id<MTLCommandBuffer> cb = queueCommandBuffer(stream);
    [cb enqueue];
  });
}

void recordLocked(Stream* stream) {
  id<MTLCommandBuffer> buffer = stream->commandBuffer();
  [buffer encodeSignalEvent:nil value:1];
}

id<MTLCommandBuffer> queueCommandBuffer(Stream* stream) {
  return stream->commandBuffer();
}

} // namespace demo
