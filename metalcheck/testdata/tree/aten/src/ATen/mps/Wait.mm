// MPS008 fixtures: locks held across GPU waits and across dispatch_sync.
#include <mutex>

namespace demo {

static std::mutex g_handlerMutex;

void Channel::flushAndWait() {
  std::lock_guard<std::recursive_mutex> lock(_channelMutex);
  [_commandBuffer commit];
  [_commandBuffer waitUntilCompleted];
}

void Channel::drain() {
  @synchronized(self) {
    commitAndWait();
  }
}

void Channel::finish() {
  std::unique_lock<std::mutex> lock(_channelMutex);
  dispatch_sync(_serialQueue, ^() {
    endKernelCoalescing();
  });
}

void Channel::hop(Channel* other) {
  dispatch_sync(_serialQueue, ^() {
    dispatch_sync(other->queue(), ^() {
      other->flush();
    });
  });
}

void Channel::syncUnderLock() {
  std::scoped_lock lock(g_handlerMutex);
  synchronize(SyncType::COMMIT_AND_WAIT);
}

// Clean: the lock is released before the wait, or never held across it.
void Channel::releaseThenWait() {
  _channelMutex.lock();
  id<MTLCommandBuffer> cb = _commandBuffer;
  _channelMutex.unlock();
  [cb waitUntilCompleted];
  _channelMutex.lock();
  _channelMutex.unlock();
}

void Channel::scopedThenWait() {
  {
    std::lock_guard<std::recursive_mutex> lock(_channelMutex);
    [_commandBuffer commit];
  }
  [_commandBuffer waitUntilCompleted];
}

// Not MPS008 (no lock is held; the queue is the channel's own), but MPS010: every
// thread that dispatches onto _serialQueue waits for the GPU with it.
void Channel::waitOnQueue() {
  dispatch_sync(_serialQueue, ^() {
    synchronize(SyncType::COMMIT_AND_WAIT);
  });
}

void Channel::deferred() {
  std::unique_lock<std::mutex> lock(_channelMutex, std::defer_lock);
  commitAndWait();
}

} // namespace demo
