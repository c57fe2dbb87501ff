// A crash of the trainer's tests prints where it happened: the GPU machines the
// tests run on have no debugger, and a bare "Segmentation fault" says nothing.
// The frames are symbol names where the executable exports them (ENABLE_EXPORTS),
// else addresses for addr2line.
#include <execinfo.h>
#include <unistd.h>

#include <csignal>
#include <initializer_list>

namespace {

void print_backtrace(int sig) {
  void* frames[64];
  const int n = backtrace(frames, 64);
  static constexpr char kHead[] = "\nfatal signal; backtrace:\n";
  (void)!write(STDERR_FILENO, kHead, sizeof(kHead) - 1);
  backtrace_symbols_fd(frames, n, STDERR_FILENO);
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

const bool installed = [] {
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) std::signal(sig, print_backtrace);
  return true;
}();

}  // namespace
