// MPS012 fixtures: pooled objects with signal and generation counters.
#pragma once
#include <memory>
#include <mutex>
#include <vector>

namespace demo {

class Fence {
 public:
  explicit Fence(id<MTLSharedEvent> ev) : m_signalValue(0), m_shared(ev) {}
  void reset(Stream* stream);
  void prepareForReuse();
  uint64_t m_generation = 0;

 private:
  uint64_t m_signalValue;
  uint64_t m_baseValue = 0;
  id<MTLSharedEvent> m_shared;
  Stream* m_stream = nullptr;
  uint64_t m_completionTime = 0;
  bool m_notified = false;
};

class FencePool {
 public:
  Fence* acquireFence(Stream* stream);

 private:
  std::mutex m_mutex;
  std::vector<std::unique_ptr<Fence>> m_free;
};

// One per timer user, never pooled.
class Timer {
 public:
  void reset();

 private:
  uint64_t m_counter = 0;
};

} // namespace demo
