// MPS010 fixtures: blocking inside a block dispatched onto a serial queue.
#include <condition_variable>
#include <mutex>

namespace demo {

class Worker {
 public:
  void finishWork();
  void flushOnly();
  void synchronize(int how);
  void run();

 private:
  dispatch_queue_t _queue = nullptr;
  id<MTLCommandBuffer> _cb = nil;
  std::mutex _m;
  std::condition_variable _cv;
  bool _done = false;
};

// Waits in its own code: a call of it inside a dispatched block waits there.
void Worker::finishWork() {
  [_cb commit];
  [_cb waitUntilCompleted];
}

// Waits only in a completion handler, which runs later on another thread.
void Worker::flushOnly() {
  [_cb addCompletedHandler:^(id<MTLCommandBuffer> done) {
    [done waitUntilCompleted];
  }];
  [_cb commit];
}

// The shape of issue 18's stream synchronize: off the queue it dispatches itself onto
// the queue, and there it waits for the GPU.
void Worker::synchronize(int how) {
  if (!onQueue()) {
    dispatch_sync(_queue, ^() {
      synchronize(how);
    });
    return;
  }
  [_cb commit];
  if (how == 2) {
    [_cb waitUntilCompleted];
  }
}

void Worker::run() {
  dispatch_sync(_queue, ^() {
    [_cb commit];
    [_cb waitUntilCompleted];
  });
  dispatch_sync_with_rethrow(_queue, ^() {
    finishWork();
  });
  dispatch_async(_queue, ^() {
    std::unique_lock<std::mutex> lock(_m);
    _cv.wait(lock, [&] { return _done; });
  });
  dispatch_async(_queue, ^() {
    dispatch_semaphore_wait(g_sem, DISPATCH_TIME_FOREVER);
    dispatch_sync(g_otherQueue, ^() {
      [_cb enqueue];
    });
  });
}

// Issue 18's device-wide synchronize: each stream's GPU work is waited for inside that
// stream's block, one stream after another (MPS009 holds: it loops over every stream).
void synchronizeAllLockstep(std::vector<Stream*>& streams) {
  for (Stream* s : streams) {
    dispatch_sync(s->queue(), ^() {
      s->synchronize(SyncType::COMMIT_AND_WAIT);
    });
  }
}

// Clean: committed on the queue, waited for after the block; a call whose arguments say
// it does not wait; a completion handler's wait; a global (concurrent) queue; a block
// that only encodes.
void Worker::commitThenWait() {
  __block id<MTLCommandBuffer> cb = nil;
  dispatch_sync(_queue, ^() {
    cb = _cb;
    [cb commit];
    synchronize(SyncType::COMMIT);
    flushOnly();
    [cb addCompletedHandler:^(id<MTLCommandBuffer> done) {
      [done waitUntilScheduled];
    }];
  });
  [cb waitUntilCompleted];
  dispatch_async(dispatch_get_global_queue(QOS_CLASS_DEFAULT, 0), ^() {
    [cb waitUntilCompleted];
  });
}

// Clean: issue 18's fix of synchronize: commit on the queue, wait after the block has
// returned. Called from a block on the queue it stops at its dispatch_sync (another
// rule's business), never waiting on the queue.
void Worker::syncFixed(int how) {
  __block id<MTLCommandBuffer> cb = nil;
  dispatch_sync(_queue, ^() {
    cb = _cb;
    [cb commit];
  });
  if (how == 2) {
    [cb waitUntilCompleted];
  }
}

void Worker::useFixed(int how) {
  dispatch_async(_otherQueue, ^() {
    syncFixed(how);
  });
}

} // namespace demo
