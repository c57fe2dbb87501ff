// A crash of the trainer's tests prints where it happened: the GPU machines the
// tests run on have no debugger, and a bare "Segmentation fault" says nothing.
// The frames are symbol names where the executable exports them (ENABLE_EXPORTS),
// else addresses for addr2line. The faulting instruction and the word at the
// stack pointer are printed as well: a call through a null or stale pointer
// leaves no frame to unwind, but its return address is on the stack. The
// handler runs on its own stack, so a stack overflow is reported too.
#include <dlfcn.h>
#include <execinfo.h>
#include <signal.h>
#include <ucontext.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>

namespace {

void print_where(const char* what, const void* p) {
  char line[512];
  Dl_info info{};
  int n = 0;
  if (p != nullptr && dladdr(p, &info) != 0 && info.dli_fname != nullptr) {
    const auto off = reinterpret_cast<uintptr_t>(p) - reinterpret_cast<uintptr_t>(info.dli_fbase);
    n = std::snprintf(line, sizeof line, "%s %p = %s(+0x%" PRIxPTR ") %s\n", what, p, info.dli_fname, off,
                      info.dli_sname != nullptr ? info.dli_sname : "?");
  } else {
    n = std::snprintf(line, sizeof line, "%s %p (in no loaded object)\n", what, p);
  }
  if (n > 0) (void)!write(STDERR_FILENO, line, static_cast<size_t>(n) < sizeof line ? n : sizeof line - 1);
}

void on_fatal(int sig, siginfo_t* si, void* ctx) {
  static constexpr char kHead[] = "\nfatal signal; backtrace:\n";
  (void)!write(STDERR_FILENO, kHead, sizeof(kHead) - 1);
  void* frames[64];
  backtrace_symbols_fd(frames, backtrace(frames, 64), STDERR_FILENO);
  print_where("fault address", si->si_addr);
#if defined(__x86_64__)
  const auto* uc = static_cast<const ucontext_t*>(ctx);
  const auto* gregs = uc->uc_mcontext.gregs;
  print_where("instruction", reinterpret_cast<const void*>(gregs[REG_RIP]));
  const auto* sp = reinterpret_cast<void* const*>(gregs[REG_RSP]);
  print_where("stack pointer", sp);
  for (int i = 0; i < 12; ++i) print_where("  word at sp", sp[i]);
#else
  (void)ctx;
#endif
  signal(sig, SIG_DFL);
  raise(sig);
}

const bool installed = [] {
  static char alt[1 << 16];
  stack_t st{};
  st.ss_sp = alt;
  st.ss_size = sizeof alt;
  sigaltstack(&st, nullptr);
  struct sigaction sa {};
  sa.sa_sigaction = on_fatal;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) sigaction(sig, &sa, nullptr);
  return true;
}();

}  // namespace
