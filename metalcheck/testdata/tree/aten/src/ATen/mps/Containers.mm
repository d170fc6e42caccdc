// MPS002 fixtures: shared containers mutated with and without a lock.
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>
#import <Foundation/Foundation.h>

namespace demo {

static std::unordered_map<std::string, int> g_cache;
static std::mutex g_cache_mutex;
static NSMutableDictionary* g_dict = nil;
static thread_local std::vector<int> t_scratch;
static const std::vector<int> kTable = {1, 2, 3};

void remember(const std::string& key, int value) {
  g_cache[key] = value;
  g_cache.emplace(key, value);
}

void rememberLocked(const std::string& key, int value) {
  std::lock_guard<std::mutex> lock(g_cache_mutex);
  g_cache[key] = value;
}

void rememberNested(const std::string& key, int value) {
  std::unique_lock<std::mutex> lock(g_cache_mutex);
  if (value > 0) {
    for (int i = 0; i < value; i++) {
      g_cache.insert({key, i});
    }
  }
}

void rememberManual(const std::string& key, int value) {
  g_cache_mutex.lock();
  g_cache.erase(key);
  g_cache_mutex.unlock();
  g_cache.clear(); // after unlock: a finding
}

void rememberObjC(id obj, NSString* key) {
  [g_dict setObject:obj forKey:key];
  @synchronized(g_dict) {
    [g_dict removeObjectForKey:key];
  }
}

void scratch(int v) {
  t_scratch.push_back(v);
  std::vector<int> local;
  local.push_back(v);
  int x = kTable[0];
  (void)x;
}

std::vector<int>& history() {
  static std::vector<int> h;
  h.push_back(1);
  return h;
}

class Library {
 public:
  Library() {
    libMap["builtin"] = 0;
  }
  int get(const std::string& key);
  int getLocked(const std::string& key);

 private:
  std::unordered_map<std::string, int> libMap;
  std::mutex mapMutex;
};

int Library::get(const std::string& key) {
  auto it = libMap.find(key);
  if (it != libMap.end()) {
    return it->second;
  }
  return libMap[key] = 1;
}

int Library::getLocked(const std::string& key) {
  std::lock_guard<std::mutex> guard(mapMutex);
  return libMap[key] = 1;
}

} // namespace demo
