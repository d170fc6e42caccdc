// MPS009 fixtures: device-wide synchronisation that waits for one stream.
#include "Stream.h"

namespace demo {

void Hooks::deviceSynchronize() const {
  getCurrentMPSStream()->synchronize(SyncType::COMMIT_AND_WAIT);
}

void GuardImpl::synchronizeDevice(int index) const {
  Stream* stream = getDefaultMPSStream();
  dispatch_sync(stream->queue(), ^() {
    stream->synchronize(SyncType::COMMIT_AND_WAIT);
  });
}

double EventPool::elapsedTime(int start, int end) {
  m_stream->synchronize(SyncType::COMMIT_AND_WAIT);
  return double(end - start);
}

void Allocator::emptyCache() {
  getDefaultMPSStream()->synchronize(SyncType::COMMIT_AND_WAIT);
}

// Clean: every stream is committed on its own queue, and the committed command buffers
// are waited for after the blocks, outside every queue (MPS010 holds too).
void StreamPool::synchronizeAll() {
  std::vector<id<MTLCommandBuffer>> committed;
  for (Stream* s : _streams) {
    __block id<MTLCommandBuffer> cb = nil;
    dispatch_sync(s->queue(), ^() {
      cb = s->commitAndTake();
    });
    committed.push_back(cb);
  }
  for (id<MTLCommandBuffer> cb : committed) {
    [cb waitUntilCompleted];
  }
}

void Hooks::synchronizeDevice() const {
  StreamPool::instance().synchronizeAll();
}

void Hooks::commitStream() const {
  getCurrentMPSStream()->synchronize(SyncType::COMMIT);
}

// Whatever the waiting method is called: by its name (...Wait, ...sync...), or because
// its definition waits for the GPU outside a loop.
void Profiler::deviceSynchronizeForTrace() const {
  getCurrentMPSStream()->flushAndWait();
}

void Tracer::synchronizeDevice() const {
  m_stream->drain();
}

void Lane::drain() {
  [_lastBuffer waitUntilCompleted];
}

// Clean: a method that waits for every stream (in a loop), a pool's every-stream wait,
// a per-stream commit that does not wait, and a device-wide helper that loops.
void Lane::finishEach() {
  for (id<MTLCommandBuffer> cb : _buffers) {
    [cb waitUntilCompleted];
  }
}

void Tracer::emptyCache() {
  m_stream->finishEach();
  streamPool()->waitAll();
  m_stream->flush(SyncType::COMMIT);
  synchronizeAllStreams();
}

} // namespace demo
