// Output files of the subcommands: opened early, checked after writing (commands.h).
#include <fmt/format.h>

#include <fstream>
#include <string>

#include "commands.h"

namespace nibble::cli {

std::ofstream open_output(const std::string& path, const std::string& option) {
  std::ofstream file;
  if (path.empty()) return file;
  file.open(path, std::ios::binary | std::ios::trunc);
  if (!file) throw UsageError(fmt::format("{}: cannot open '{}' for writing", option, path));
  return file;
}

void finish_output(std::ofstream& file, const std::string& path) {
  file.close();
  if (!file) throw UsageError(fmt::format("cannot write '{}'", path));
}

void write_output(const std::string& path, const std::string& option, const std::string& text) {
  std::ofstream file = open_output(path, option);
  file << text;
  finish_output(file, path);
}

}  // namespace nibble::cli
