// MPS006 fixtures: an operator file, so every function body here is on the hot path.
#include <mutex>
#include <shared_mutex>

namespace demo {

static std::mutex g_encode_mutex;
static thread_local std::mutex t_mutex;
static std::once_flag g_init_once;

struct Kernel {
  std::mutex own;
  void run();
};

void add_out_mps(int a, int b) {
  std::lock_guard<std::mutex> lock(g_encode_mutex);
  (void)(a + b);
}

void mul_out_mps(int a) {
  std::call_once(g_init_once, [] { /* one-time setup */ });
  std::lock_guard<std::mutex> lock(t_mutex);
  (void)a;
}

void Kernel::run() {
  std::lock_guard<std::mutex> lock(own);
}

void sub_out_mps() {
  static std::shared_mutex s_table_mutex;
  std::shared_lock guard(s_table_mutex);
}

} // namespace demo
