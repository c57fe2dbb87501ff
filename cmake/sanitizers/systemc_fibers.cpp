// Linked into every program that links the SystemC model, in the sanitizer build only
// (-DNIBBLE_SANITIZE=ON, model/CMakeLists.txt). Not part of the model.
//
// SystemC 2.3.4 (Debian's libsystemc) tells AddressSanitizer about its QuickThreads stack
// switches, but passes the main coroutine's stack as {nullptr, 0}: after the first switch
// back to main, ASan believes the main stack spans [0, 0). From then on every `throw` on
// the main stack skips unpoisoning the frames it unwinds ("ASan is ignoring requested
// __asan_handle_no_return"), and the stale poison is reported as stack-use-after-scope in
// whatever code next uses that stack: false reports in the project's code, which no
// suppression can name.
//
// These definitions take the place of ASan's two fiber calls for libsystemc (the program's
// own symbols bind first) and forward to ASan's, with one correction: a switch to the main
// stack names the main stack's real bounds, recorded from ASan when the main stack was
// left. The program's own code never switches stacks, so only SystemC's calls pass here.
#include <dlfcn.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>

namespace {

using StartFn = void (*)(void**, const void*, std::size_t);
using FinishFn = void (*)(void*, const void**, std::size_t*);

template <typename Fn>
Fn asan_function(const char* name) {
  void* f = dlsym(RTLD_NEXT, name);
  if (f == nullptr) {
    std::fprintf(stderr, "nibble: error: %s not found: the sanitizer build needs ASan's runtime\n", name);
    std::abort();
  }
  return reinterpret_cast<Fn>(f);
}

// Single-threaded: SystemC runs every coroutine on the thread that called sc_start.
const void* main_bottom = nullptr;
std::size_t main_size = 0;
bool on_main = true;
bool to_main = false;

}  // namespace

extern "C" __attribute__((visibility("default"))) void __sanitizer_start_switch_fiber(void** fake_stack_save,
                                                                                       const void* bottom,
                                                                                       std::size_t size) {
  static const StartFn start = asan_function<StartFn>("__sanitizer_start_switch_fiber");
  to_main = bottom == nullptr && size == 0;
  if (to_main) {
    bottom = main_bottom;
    size = main_size;
  }
  start(fake_stack_save, bottom, size);
}

extern "C" __attribute__((visibility("default"))) void __sanitizer_finish_switch_fiber(void* fake_stack_save,
                                                                                        const void** bottom_old,
                                                                                        std::size_t* size_old) {
  static const FinishFn finish = asan_function<FinishFn>("__sanitizer_finish_switch_fiber");
  const void* left_bottom = nullptr;
  std::size_t left_size = 0;
  finish(fake_stack_save, &left_bottom, &left_size);
  if (on_main) {
    main_bottom = left_bottom;
    main_size = left_size;
  }
  on_main = to_main;
  if (bottom_old != nullptr) *bottom_old = left_bottom;
  if (size_old != nullptr) *size_old = left_size;
}
