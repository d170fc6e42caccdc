// MPS011 fixtures: counters changed under locks that are not one lock.
#include "Counters.h"

namespace demo {

uint64_t IdBlock::s_nextId = 0;
std::atomic<uint64_t> IdBlock::s_nextAtomicId{0};

static Lanes& lanes() {
  static Lanes s_lanes; // one per process: m_recorded is process-wide
  return s_lanes;
}

static std::mutex g_statsMutex;
static std::mutex g_traceMutex;
static std::mutex g_onceMutex;
static uint64_t g_opsCounted = 0;
static uint64_t g_bytes = 0;
static uint64_t g_shardHits = 0;
static uint64_t g_neverLocked = 0;
static uint64_t g_oneLock = 0;

// new IdBlock(true) runs ++s_nextId under the lane's mutex only: lanes do not exclude
// each other (the allocator's buffer and heap ids in issue 18).
IdBlock* Lanes::allocate(size_t lane) {
  std::lock_guard<std::mutex> lock(m_lanes[lane].mutex);
  m_lanes[lane].uses++;
  return allocateLocked(lane);
}

IdBlock* Lanes::allocateLocked(size_t lane) {
  IdBlock::s_nextAtomicId++;
  return new IdBlock(true);
}
// A shard's mutex guards neither a static nor a member of the one Lanes object.
void Lanes::record(size_t lane) {
  auto& shard = m_shards[lane % 16];
  std::lock_guard<std::mutex> lock(shard.mutex);
  g_shardHits += 1;
  ++this->m_recorded;
}

// Two functions, two mutexes.
void countOp() {
  std::lock_guard<std::mutex> lock(g_statsMutex);
  g_opsCounted++;
}

void traceOp() {
  std::lock_guard<std::mutex> lock(g_traceMutex);
  g_opsCounted++;
}

// One lock, in one place directly and in another through the only caller.
void addBytes(uint64_t n) {
  std::lock_guard<std::mutex> lock(g_onceMutex);
  g_bytes += n;
  subtractBytesLocked(n);
}

void subtractBytesLocked(uint64_t n) {
  g_bytes -= n;
  g_oneLock++;
}

void resetBytes() {
  g_onceMutex.lock();
  g_oneLock = 0;
  g_oneLock |= 1;
  g_onceMutex.unlock();
}

// Clean: never locked anywhere (not a lock mix-up), a local, an atomic, a lane's own
// counter (lanes are many).
void countFreely() {
  g_neverLocked++;
  uint64_t local = 0;
  local += 2;
  IdBlock::s_nextAtomicId += 2;
}

} // namespace demo
