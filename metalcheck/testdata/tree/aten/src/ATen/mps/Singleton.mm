// MPS001 fixtures: lazy singletons, and their fixed forms.
#include <mutex>

namespace demo {

class Widget {};

static Widget* g_widget = nullptr;

Widget* getWidget() {
  if (!g_widget)
    g_widget = new Widget();
  return g_widget;
}

class Registry {
 public:
  static Registry* instance() {
    if (_instance == nullptr) {
      _instance = new Registry();
    }
    return _instance;
  }

 private:
  static Registry* _instance;
};

Registry* Registry::_instance = nullptr;

Widget* localStaticPointer() {
  static Widget* w = nullptr;
  if (nullptr == w) {
    w = new Widget();
  }
  return w;
}

// Fixed forms: none of these is a finding.

Widget* magicStatic() {
  static Widget w; // initialised once, thread-safely
  return &w;
}

static std::once_flag g_once;
static Widget* g_once_widget = nullptr;

Widget* onceWidget() {
  std::call_once(g_once, [] {
    if (!g_once_widget) {
      g_once_widget = new Widget();
    }
  });
  return g_once_widget;
}

static std::mutex g_mutex;
static Widget* g_dcl_widget = nullptr;

Widget* doubleChecked() {
  if (!g_dcl_widget) {
    std::lock_guard<std::mutex> guard(g_mutex);
    if (!g_dcl_widget) {
      g_dcl_widget = new Widget();
    }
  }
  return g_dcl_widget;
}

static thread_local Widget* t_widget = nullptr;

Widget* perThread() {
  if (!t_widget) {
    t_widget = new Widget();
  }
  return t_widget;
}

Widget* localOnly() {
  Widget* mine = nullptr;
  if (!mine) {
    mine = new Widget();
  }
  return mine;
}

} // namespace demo
