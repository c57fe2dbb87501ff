#pragma once
// Child processes of `nibble train` and `nibble train-study run`: each run (or
// data-parallel rank) is a separate process so a crash, a pause or a time limit
// in one leaves the others and their logs alone.
#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace nibble::train {

// A child process: its arguments after the program name, extra environment
// ("KEY=value", replacing the inherited value), and where its stdout and stderr
// go ("" = this process's). append_log keeps what the log already holds (a run
// resuming from its checkpoint continues the log of the calls before it).
struct Child {
  std::vector<std::string> args;
  std::vector<std::string> env;
  std::string log;
  bool append_log = false;
  pid_t pid = -1;
};

// Starts `c` as `exe` (default: this program again) with argv[0] "nibble".
// Throws std::runtime_error when it cannot be started.
void start(Child& c, const std::string& exe = "/proc/self/exe");

// Exit status of a started child, waiting for it: its exit code, or 128 + the
// signal that ended it.
int wait_for(Child& c);

// Seconds from now until `deadline` (negative once it has passed).
double seconds_until(std::chrono::steady_clock::time_point deadline);

// Status of a child run that was not started because the deadline had passed.
constexpr int kNotStarted = -2;

// Exit status of a `nibble` that stopped its run at a checkpoint (its time limit
// passed): the same command continues it.
constexpr int kPausedStatus = 3;

// Runs the children, at most one per slot at a time; slot k's child gets
// CUDA_VISIBLE_DEVICES=slots[k]. Returns their exit statuses in order. With a
// deadline, each child is given the time left as a trailing `--time-limit S`,
// and those not started before it are kNotStarted.
std::vector<int> run_children(std::vector<Child>& children, const std::vector<std::string>& slots,
                              std::optional<std::chrono::steady_clock::time_point> deadline = std::nullopt,
                              const std::string& exe = "/proc/self/exe");

}  // namespace nibble::train
