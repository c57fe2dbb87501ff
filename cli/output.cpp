// Output files of the subcommands: checked before the work, written under a
// temporary name, renamed into place when complete (commands.h).
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <system_error>
#include <vector>

#include "commands.h"

namespace nibble::cli {
namespace {

namespace fs = std::filesystem;

struct Input {
  std::string path, option;
};
std::vector<Input> g_inputs;
struct Pending {
  std::string temporary;  // written now
  std::string target;     // renamed onto when complete: the path, or the file a link names
};
std::map<std::string, Pending> g_pending;  // by output path

// The directory a new file at `path` goes into.
fs::path directory_of(const std::string& path) {
  const fs::path parent = fs::path(path).parent_path();
  return parent.empty() ? fs::path(".") : parent;
}

// An existing path that is not a regular file (a device such as /dev/null, a pipe, or a
// link to one): written in place, since renaming over it would replace the device.
bool special_file(const std::string& path) {
  std::error_code ec;
  return fs::exists(path, ec) && !fs::is_regular_file(path, ec);
}

bool same_file(const std::string& a, const std::string& b) {
  std::error_code ec;
  if (fs::equivalent(a, b, ec)) return true;
  const fs::path ca = fs::weakly_canonical(a, ec);
  if (ec) return false;
  const fs::path cb = fs::weakly_canonical(b, ec);
  return !ec && ca == cb;
}

// Creates an empty file in the directory of `path` whose name ends like
// `path`'s (so that its extension is the same), with the permissions of the
// file it replaces, or those a new file gets under the umask; returns its name
// or an error text.
std::string make_temporary(const std::string& path, std::string* error) {
  const std::string suffix = "-" + fs::path(path).filename().string();
  std::string name = (directory_of(path) / (".nibble-XXXXXX" + suffix)).string();
  const int fd = mkstemps(name.data(), static_cast<int>(suffix.size()));
  if (fd < 0) {
    *error = std::strerror(errno);
    return "";
  }
  struct stat existing {};
  if (stat(path.c_str(), &existing) == 0) {
    fchmod(fd, existing.st_mode & 07777);
  } else {
    const mode_t mask = umask(0);
    umask(mask);
    fchmod(fd, static_cast<mode_t>(0666 & ~mask));
  }
  close(fd);
  return name;
}

}  // namespace

std::string output_defect(const std::string& path, bool probe) {
  if (path.empty()) return "no file named";
  const auto defect = [&path](const std::string& why) {
    return fmt::format("cannot open '{}' for writing: {}", path, why);
  };
  std::error_code ec;
  if (fs::is_directory(path, ec)) return defect("it is a directory");
  if (special_file(path)) return "";
  const fs::path dir = directory_of(path);
  if (!fs::is_directory(dir, ec)) return defect(fmt::format("directory '{}' does not exist", dir.string()));
  if (probe) {
    // A file made and removed again: the one test of writability that holds for every user
    // (root included) and every file system.
    std::string error;
    const std::string temporary = make_temporary(path, &error);
    if (temporary.empty()) return defect(error);
    std::remove(temporary.c_str());
  }
  return "";
}

void prepare_directory(const std::string& dir, const std::string& option) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    fs::create_directories(dir, ec);
    if (ec || !fs::is_directory(dir)) {
      throw UsageError(fmt::format("{}: cannot use directory '{}': {}", option, dir,
                                   ec ? ec.message() : "it exists and is not a directory"));
    }
  }
  if (const std::string defect = output_defect((fs::path(dir) / "probe").string(), true); !defect.empty()) {
    throw UsageError(fmt::format("{}: cannot use directory '{}': {}", option, dir, defect));
  }
}

void note_input(const std::string& path, const std::string& option) {
  if (!path.empty() && path != "-") g_inputs.push_back({path, option});
}

std::string reserve_output(const std::string& path, const std::string& option) {
  if (const std::string defect = output_defect(path, false); !defect.empty()) {
    throw UsageError(fmt::format("{}: {}", option, defect));
  }
  for (const Input& in : g_inputs) {
    if (same_file(path, in.path)) {
      throw UsageError(fmt::format("{}: '{}' is also the input of {}; name another file", option, path, in.option));
    }
  }
  if (g_pending.count(path) != 0) throw UsageError(fmt::format("{}: '{}' is named as two outputs", option, path));
  if (special_file(path)) return path;
  std::string target = path;
  std::error_code ec;
  if (fs::is_symlink(fs::symlink_status(path, ec))) {
    target = fs::weakly_canonical(path, ec).string();
    if (ec) throw UsageError(fmt::format("{}: cannot open '{}' for writing: {}", option, path, ec.message()));
  }
  std::string error;
  const std::string temporary = make_temporary(target, &error);
  if (temporary.empty()) throw UsageError(fmt::format("{}: cannot open '{}' for writing: {}", option, path, error));
  g_pending[path] = Pending{temporary, target};
  return temporary;
}

void commit_output(const std::string& path) {
  const auto it = g_pending.find(path);
  if (it == g_pending.end()) return;
  std::error_code ec;
  fs::rename(it->second.temporary, it->second.target, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(it->second.temporary, ignored);
    g_pending.erase(it);
    throw UsageError(fmt::format("cannot write '{}': {}", path, ec.message()));
  }
  g_pending.erase(it);
}

void discard_outputs() {
  for (const auto& entry : g_pending) std::remove(entry.second.temporary.c_str());
  g_pending.clear();
}

std::ofstream open_output(const std::string& path, const std::string& option) {
  std::ofstream file;
  if (path.empty()) return file;
  const std::string temporary = reserve_output(path, option);
  file.open(temporary, std::ios::binary | std::ios::trunc);
  if (!file) throw UsageError(fmt::format("{}: cannot open '{}' for writing", option, path));
  return file;
}

void finish_output(std::ofstream& file, const std::string& path) {
  file.close();
  if (!file) throw UsageError(fmt::format("cannot write '{}'", path));
  commit_output(path);
}

void write_output(const std::string& path, const std::string& option, const std::string& text) {
  std::ofstream file = open_output(path, option);
  file << text;
  finish_output(file, path);
}

}  // namespace nibble::cli
