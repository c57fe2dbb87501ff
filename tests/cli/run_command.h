// Runs the built `nibble` binary from a test and captures what it printed.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>
#include <vector>

namespace nibble::test {

struct CommandResult {
  int exit_code;
  std::string output;  // stdout and stderr together
};

// `args` is appended to the binary's path as-is (quote what needs quoting).
inline CommandResult run_nibble(const std::string& args) {
  const std::string cmd = std::string(NIBBLE_BINARY) + " " + args + " 2>&1";
  CommandResult r{-1, {}};
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return r;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) r.output.append(buf.data(), n);
  const int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// A bad invocation of a command and (part of) the message it must print.
struct UsageCase {
  std::string args;
  std::string message;
};

// Runs `nibble COMMAND ARGS` for every case: each must exit 2 (a usage error)
// printing its message. Returns how many cases ran.
inline int expect_usage_errors(const std::string& command, const std::vector<UsageCase>& cases) {
  int n = 0;
  for (const UsageCase& c : cases) {
    const CommandResult r = run_nibble(command + " " + c.args);
    SCOPED_TRACE(command + " " + c.args + "\n" + r.output);
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.output.find(c.message), std::string::npos);
    ++n;
  }
  return n;
}

}  // namespace nibble::test
