// MPS011 fixtures: the classes, declared in a header as the allocator's are.
#pragma once
#include <array>
#include <atomic>
#include <mutex>

namespace demo {

struct IdBlock {
  uint64_t id;
  static uint64_t s_nextId;
  static std::atomic<uint64_t> s_nextAtomicId;
  IdBlock(bool real) : id(real ? ++s_nextId : 0) {}
};

class Lanes {
 public:
  IdBlock* allocate(size_t lane);
  IdBlock* allocateLocked(size_t lane);
  void record(size_t lane);

 private:
  struct Lane {
    std::mutex mutex;
    size_t uses = 0;
  };
  std::array<Lane, 8> m_lanes;
  struct Shard {
    std::mutex mutex;
  };
  std::array<Shard, 16> m_shards;
  size_t m_recorded = 0;
};

} // namespace demo
