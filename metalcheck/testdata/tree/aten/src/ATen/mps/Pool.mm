// MPS006 fixtures: process-wide locks on hot paths, and locks that are not.
#include "Pool.h"

namespace demo {

static std::mutex g_runMutex;
static std::shared_mutex g_pipelineMutex;
static std::mutex g_statsMutex;
static thread_local std::mutex t_scratchMutex;

static BufferPool& pool() {
  static BufferPool s_pool;
  return s_pool;
}

KernelLibrary& bundledKernels() {
  static BundledKernels kernels;
  return kernels;
}

void* BufferPool::malloc(size_t size) {
  std::lock_guard<std::recursive_mutex> lock(m_poolMutex);
  return ::operator new(size);
}

void BufferPool::free(void* ptr) {
  std::unique_lock<std::recursive_mutex> lock(m_poolMutex);
  ::operator delete(ptr);
}

size_t BufferPool::cachedBytes() const {
  std::lock_guard<std::recursive_mutex> lock(m_poolMutex);
  return 0;
}

void Lane::encodeCopy(int bytes) {
  std::lock_guard<std::mutex> lock(_laneMutex);
  (void)bytes;
}

void* KernelLibrary::getPipelineFor(const char* name) {
  std::shared_lock<std::shared_mutex> lock(_libMutex);
  return (void*)name;
}

void runKernel(int n) {
  std::lock_guard<std::mutex> lock(g_runMutex);
  (void)n;
}

void* getPipelineState(const char* name) {
  std::shared_lock<std::shared_mutex> lock(g_pipelineMutex);
  return (void*)name;
}

void recordStats(int n) {
  std::lock_guard<std::mutex> lock(g_statsMutex);
  (void)n;
}

void executeScratch(int n) {
  std::lock_guard<std::mutex> lock(t_scratchMutex);
  (void)n;
}

static std::mutex g_cacheMutex;
static std::unordered_map<int, void*> g_cache;
static thread_local std::unordered_map<int, void*> t_cache;

void* getKernelFast(int key) {
  auto it = t_cache.find(key);
  if (it != t_cache.end()) {
    return it->second;
  }
  std::lock_guard<std::mutex> lock(g_cacheMutex);
  return t_cache[key] = g_cache[key];
}

void* getKernelLocalCache(int key) {
  static thread_local std::unordered_map<int, void*> seen;
  if (seen.count(key)) {
    return seen[key];
  }
  std::lock_guard<std::mutex> lock(g_cacheMutex);
  return seen[key] = g_cache[key];
}

void* getKernelChecked(int key) {
  if (key < 0) {
    return nullptr;
  }
  std::lock_guard<std::mutex> lock(g_cacheMutex);
  return g_cache[key];
}

} // namespace demo
