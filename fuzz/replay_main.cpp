// A main for the fuzz targets in builds without libFuzzer (any compiler): runs
// LLVMFuzzerTestOneInput on every file of the corpus directories given, then on
// seeded mutants of each (truncations, bit flips, byte overwrites, deletions,
// duplicated ranges). It keeps the corpus -- including every input a fuzzer once
// crashed on -- a regression test of the ordinary build, with the same
// pass/fail rule as libFuzzer: a crash or an abort in the target is a failure.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

namespace fs = std::filesystem;

using Bytes = std::vector<uint8_t>;

void run(const Bytes& b) { LLVMFuzzerTestOneInput(b.data(), b.size()); }

// Bytes that steer parsers into their edge cases: structure, digits, limits.
constexpr uint8_t kInteresting[] = {0x00, 0x01, 0x7f, 0x80, 0xff, '9', '-', '.', 'e', '[', '{', '"', ':', ','};

Bytes mutate(const Bytes& in, std::mt19937_64& rng) {
  Bytes b = in;
  auto below = [&](size_t n) { return n == 0 ? size_t{0} : static_cast<size_t>(rng() % n); };
  const int edits = 1 + static_cast<int>(below(4));
  for (int e = 0; e < edits; ++e) {
    switch (below(5)) {
      case 0:  // truncate
        b.resize(below(b.size() + 1));
        break;
      case 1:  // flip one bit
        if (!b.empty()) b[below(b.size())] ^= static_cast<uint8_t>(1u << below(8));
        break;
      case 2:  // overwrite a byte with an interesting value
        if (!b.empty()) b[below(b.size())] = kInteresting[below(sizeof(kInteresting))];
        break;
      case 3: {  // delete a range
        const size_t at = below(b.size() + 1), n = below(std::min<size_t>(b.size() - at, 64) + 1);
        b.erase(b.begin() + static_cast<std::ptrdiff_t>(at), b.begin() + static_cast<std::ptrdiff_t>(at + n));
        break;
      }
      default: {  // duplicate a range in place
        const size_t at = below(b.size() + 1), n = below(std::min<size_t>(b.size() - at, 64) + 1);
        const Bytes chunk(b.begin() + static_cast<std::ptrdiff_t>(at), b.begin() + static_cast<std::ptrdiff_t>(at + n));
        b.insert(b.begin() + static_cast<std::ptrdiff_t>(at), chunk.begin(), chunk.end());
        break;
      }
    }
  }
  return b;
}

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr, "replay: %s\nusage: replay [--mutants N] [--seed S] CORPUS_DIR_OR_FILE...\n", why);
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  unsigned long mutants = 0;
  unsigned long long seed = 1;
  std::vector<fs::path> files;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--mutants" || a == "--seed") {
      if (i + 1 >= argc) usage("a value is missing");
      char* end = nullptr;
      const unsigned long long v = std::strtoull(argv[++i], &end, 10);
      if (*end != '\0') usage("not a number");
      if (a == "--mutants") {
        mutants = static_cast<unsigned long>(v);
      } else {
        seed = v;
      }
    } else if (fs::is_directory(a)) {
      for (const auto& e : fs::directory_iterator(a)) {
        if (e.is_regular_file()) files.push_back(e.path());
      }
    } else if (fs::is_regular_file(a)) {
      files.emplace_back(a);
    } else {
      usage(("no such corpus: " + a).c_str());
    }
  }
  std::sort(files.begin(), files.end());  // the same order, so the same mutants, everywhere
  if (files.empty()) usage("no input files: nothing was checked");
  unsigned long long runs = 0;
  for (size_t f = 0; f < files.size(); ++f) {
    std::ifstream in(files[f], std::ios::binary);
    const Bytes original((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    run(original);
    ++runs;
    std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ull + f);
    for (unsigned long m = 0; m < mutants; ++m, ++runs) run(mutate(original, rng));
  }
  std::printf("replay: %llu inputs (%zu corpus files, %lu mutants each, seed %llu), no failure\n", runs,
              files.size(), mutants, seed);
  return 0;
}
