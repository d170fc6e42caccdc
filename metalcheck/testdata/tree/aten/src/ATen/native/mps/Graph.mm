// MPS006 outside operations/: only runMPSGraph / executeMPSGraph / encode paths count.
#include <mutex>

namespace demo {

std::mutex g_graph_mutex;

void runMPSGraph(int graph) {
  g_graph_mutex.lock();
  (void)graph;
  g_graph_mutex.unlock();
}

void buildGraphOnce() {
  std::lock_guard<std::mutex> lock(g_graph_mutex);
}

} // namespace demo
