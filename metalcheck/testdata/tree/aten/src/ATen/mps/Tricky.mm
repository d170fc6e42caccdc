// Tricky inputs: nothing in this file is a finding except where the test table says so.
#include <mutex>
#include <string>
#include <unordered_map>
#import <Foundation/Foundation.h>

namespace demo {

class Thing {};
static Thing* g_thing = nullptr;
static std::unordered_map<int, int> g_map;
static std::mutex g_map_mutex;
static NSMutableArray* g_objects = nil;

/* A block comment showing the bad pattern:
   if (!g_thing) g_thing = new Thing();
   g_map[1] = 2;  false && x */
// if (!g_thing) g_thing = new Thing();   g_map[3] = 4;

const char* kDoc = "if (!g_thing) g_thing = new Thing(); g_map[5] = 6; if (0) {}";
const char* kRaw = R"doc(
  if (!g_thing) { g_thing = new Thing(); }
  g_map[7] = 8; )" still inside; false && true
)doc";
NSString* kObjC = @"g_map[9] = 10; if (false) {}";
const char kQuote = '"';
const char* kSplice = "a \
g_map[11] = 12;";

#define REMEMBER(k, v) \
  g_map[k] = v;       \
  if (0) {}

[[nodiscard]] Thing* makeThing();

Thing* lockedInEnclosingScope() {
  std::lock_guard<std::mutex> guard(g_map_mutex);
  {
    if (true) {
      g_map[1] = 1;
      if (!g_thing) {
        g_thing = new Thing();
      }
    }
  }
  return g_thing;
}

void objcSends(id obj) {
  [obj insert:g_map];
  [[NSMutableArray alloc] init];
  [obj setObject:obj forKey:@"g_map"];
  @synchronized(g_objects) {
    [g_objects addObject:obj];
  }
}

void dispatchGuarded(dispatch_queue_t q) {
  dispatch_sync(q, ^{
    g_map.emplace(2, 2);
    [g_objects removeAllObjects];
  });
}

void onceGuarded() {
  static std::once_flag once;
  std::call_once(once, [&]() {
    g_map.clear();
  });
}

void perThreadMap() {
  static thread_local std::unordered_map<int, int> cache;
  cache[1] = 2;
  cache.erase(1);
}

void lambdaInside() {
  auto fill = [](std::unordered_map<int, int>& m) { m[1] = 2; };
  std::unordered_map<int, int> mine;
  fill(mine);
}

#if 0
void disabled() {
  g_map[13] = 14;
}
#else
void enabled() {
  std::lock_guard<std::mutex> guard(g_map_mutex);
  g_map[15] = 16;
}
#endif

void unguarded() {
  g_map.erase(3);
  [g_objects addObject:@"x"];
}

void insidePool(id obj) {
  @autoreleasepool {
    std::lock_guard<std::mutex> guard(g_map_mutex);
    g_map[17] = 18;
    [g_objects addObject:obj];
  }
}

} // namespace demo
