// MPS006 fixtures outside operations/: operator and kernel entries are hot wherever
// they are defined.
#include <mutex>

namespace demo {

static std::mutex g_kernelMutex;

TORCH_IMPL_FUNC(logit_backward_out)(const Tensor& self, int64_t dim, const Tensor& out) {
  std::lock_guard<std::mutex> lock(g_kernelMutex);
}

void exp_kernel_mps(TensorIteratorBase& iter) {
  std::lock_guard<std::mutex> lock(g_kernelMutex);
}

Tensor _mps_linear(const Tensor& input, const Tensor& weight) {
  std::unique_lock<std::mutex> lock(g_kernelMutex);
  return input;
}

static void cumsum_kernel(const Tensor& self) {
  g_kernelMutex.lock();
  g_kernelMutex.unlock();
}

// Clean: not operator or kernel entries (camelCase helpers, a one-time setup), and a
// per-call local mutex in an entry.
void mpsKernelStats() {
  std::lock_guard<std::mutex> lock(g_kernelMutex);
}

void build_graph_once() {
  std::lock_guard<std::mutex> lock(g_kernelMutex);
}

void abs_out_mps(const Tensor& self) {
  std::mutex local;
  std::lock_guard<std::mutex> lock(local);
}

} // namespace demo
