// Runs the built `nibble` binary from a test and captures what it printed.
#pragma once

#include <array>
#include <cstdio>
#include <string>
#include <sys/wait.h>

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

}  // namespace nibble::test
