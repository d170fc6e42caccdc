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

// Clean: every stream is waited for, each on its own queue.
void StreamPool::synchronizeAll() {
  for (Stream* s : _streams) {
    dispatch_sync(s->queue(), ^() {
      s->synchronize(SyncType::COMMIT_AND_WAIT);
    });
  }
}

void Hooks::synchronizeDevice() const {
  StreamPool::instance().synchronizeAll();
}

void Hooks::commitStream() const {
  getCurrentMPSStream()->synchronize(SyncType::COMMIT);
}

} // namespace demo
