// Callers: a helper whose every caller holds the lock, or is the constructor, is not
// reported; one that some caller reaches without the lock is.
#include <mutex>
#include <unordered_map>
#include <vector>

namespace demo {

class Cache {
 public:
  Cache() { initTables(); }
  void put(int key, int value);
  void putUnlocked(int key, int value);
  void reset();

 private:
  void insertLocked(int key, int value);
  void store(int key, int value);
  void record(int key);
  void initTables();
  void refill();
  std::recursive_mutex _mutex;
  std::unordered_map<int, int> _table;
  std::vector<int> _log;
  std::vector<int> _spare;
};

void Cache::initTables() {
  _spare.resize(16);
  refill();
}

void Cache::refill() {
  _spare.push_back(0);
}

void Cache::store(int key, int value) {
  _table[key] = value;
  record(key);
}

void Cache::record(int key) {
  _log.push_back(key);
}

void Cache::put(int key, int value) {
  std::lock_guard<std::recursive_mutex> lock(_mutex);
  store(key, value);
}

void Cache::putUnlocked(int key, int value) {
  record(key);
  (void)value;
}

void Cache::reset() {
  std::lock_guard<std::recursive_mutex> lock(_mutex);
  refill();
  _table.clear();
}

} // namespace demo
