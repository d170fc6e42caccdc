// MPS012 fixtures: resetting a pooled object's signal counter on reuse.
#include "EventPool.h"

namespace demo {

void Fence::reset(Stream* stream) {
  if (stream != m_stream) {
    m_signalValue = 0;
    m_shared.signaledValue = 0;
    m_stream = stream;
  }
  m_completionTime = 0;
  m_notified = false;
}

Fence* FencePool::acquireFence(Stream* stream) {
  std::lock_guard<std::mutex> lock(m_mutex);
  Fence* fence = m_free.back().release();
  m_free.pop_back();
  fence->m_generation = 0;
  fence->reset(stream);
  return fence;
}

// Clean: the counter stays monotonic (waits compare with a base taken at reuse); a
// counter of an object that is never pooled.
void Fence::prepareForReuse() {
  m_baseValue = m_signalValue;
  m_notified = false;
}

void Timer::reset() {
  m_counter = 0;
}

} // namespace demo
