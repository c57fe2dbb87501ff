#include "nibble/train/child_runs.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>
#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

extern "C" char** environ;

namespace nibble::train {

void start(Child& c, const std::string& exe) {
  std::vector<std::string> argv_s{"nibble"};
  argv_s.insert(argv_s.end(), c.args.begin(), c.args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_s;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string kv = *e;
    const std::string key = kv.substr(0, kv.find('='));
    bool replaced = false;
    for (const auto& x : c.env) replaced |= x.substr(0, x.find('=')) == key;
    if (!replaced) env_s.push_back(kv);
  }
  env_s.insert(env_s.end(), c.env.begin(), c.env.end());
  std::vector<char*> envp;
  for (auto& e : env_s) envp.push_back(e.data());
  envp.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  if (!c.log.empty()) {
    posix_spawn_file_actions_addopen(&fa, 1, c.log.c_str(), O_WRONLY | O_CREAT | (c.append_log ? O_APPEND : O_TRUNC), 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
  }
  const int rc = posix_spawn(&c.pid, exe.c_str(), &fa, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) throw std::runtime_error(fmt::format("cannot start a child nibble: {}", std::strerror(rc)));
}

int wait_for(Child& c) {
  int status = 0;
  while (waitpid(c.pid, &status, 0) < 0) {
    if (errno != EINTR) return 1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

double seconds_until(std::chrono::steady_clock::time_point deadline) {
  return std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count();
}

std::vector<int> run_children(std::vector<Child>& children, const std::vector<std::string>& slots,
                              std::optional<std::chrono::steady_clock::time_point> deadline, const std::string& exe) {
  if (slots.empty() && !children.empty()) throw std::invalid_argument("run_children: no slot to run a child in");
  std::vector<int> status(children.size(), -1);
  std::vector<int> slot_of(children.size(), -1);
  std::vector<bool> busy(slots.size(), false);
  size_t next = 0;
  size_t running = 0;
  while (next < children.size() || running > 0) {
    while (next < children.size() && running < slots.size()) {
      if (deadline) {
        const double left = seconds_until(*deadline);
        if (left < 1.0) {
          status[next++] = kNotStarted;
          continue;
        }
        children[next].args.push_back("--time-limit");
        children[next].args.push_back(fmt::format("{:.0f}", left));
      }
      const size_t k = static_cast<size_t>(std::find(busy.begin(), busy.end(), false) - busy.begin());
      children[next].env.push_back(std::string("CUDA_VISIBLE_DEVICES=") + slots[k]);
      start(children[next], exe);
      busy[k] = true;
      slot_of[next] = static_cast<int>(k);
      ++next;
      ++running;
    }
    // Past the deadline the loop above may mark every remaining child not started
    // while none runs: there is nothing to wait for then.
    if (running == 0) break;
    int st = 0;
    const pid_t pid = wait(&st);
    if (pid < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error(fmt::format("waiting for the child runs failed: {}", std::strerror(errno)));
    }
    for (size_t i = 0; i < children.size(); ++i) {
      if (children[i].pid == pid && status[i] < 0) {
        status[i] = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        busy[static_cast<size_t>(slot_of[i])] = false;
        --running;
      }
    }
  }
  return status;
}

}  // namespace nibble::train
