// Helpers shared by the C++ tests of the area/energy flow: environment and shell commands.
#pragma once

#include <array>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace nibble::synth_test {

// The environment variable `name`, or `fallback` where it is unset or empty.
inline std::string env(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::string(v) : fallback;
}

// Runs a shell command; returns its exit status, with stdout and stderr in `out`.
inline int run(const std::string& cmd, std::string& out) {
  out.clear();
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (p == nullptr) return -1;
  std::array<char, 4096> buf{};
  while (std::fgets(buf.data(), buf.size(), p) != nullptr) out += buf.data();
  return pclose(p);
}

}  // namespace nibble::synth_test
