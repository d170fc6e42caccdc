// MPS006 fixtures: which classes are process-wide is decided from every audited file.
#pragma once
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <vector>

namespace demo {

class BufferPool {
 public:
  void* malloc(size_t size);
  void free(void* ptr);
  size_t cachedBytes() const;

 private:
  mutable std::recursive_mutex m_poolMutex;
};

class Lane {
 public:
  void encodeCopy(int bytes);

 private:
  std::mutex _laneMutex;
};

class LanePool {
 public:
  Lane* laneFor(int index);

 private:
  std::vector<std::unique_ptr<Lane>> _lanes;
};

class KernelLibrary {
 public:
  void* getPipelineFor(const char* name);

 private:
  std::shared_mutex _libMutex;
};

class BundledKernels : public KernelLibrary {};

} // namespace demo
