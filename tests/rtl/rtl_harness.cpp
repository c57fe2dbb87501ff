#include "rtl_harness.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace nibble::rtl_test {

std::string current_test_name() {
  const testing::TestInfo* info = testing::UnitTest::GetInstance()->current_test_info();
  if (info == nullptr) return "rtl";
  return std::string(info->test_suite_name()) + "." + info->name();
}

uint64_t test_seed() {
  uint64_t seed = kDefaultSeed;
  if (const char* s = std::getenv("NIBBLE_RTL_SEED"); s != nullptr && *s != '\0') {
    seed = std::strtoull(s, nullptr, 0);
  }
  std::printf("[ seed     ] %s: NIBBLE_RTL_SEED=0x%llx\n", current_test_name().c_str(),
              static_cast<unsigned long long>(seed));
  return seed;
}

std::unique_ptr<VerilatedContext> make_context(uint64_t seed) {
  auto context = std::make_unique<VerilatedContext>();
  context->randReset(2);  // randomize every initial value (--x-initial unique)
  context->randSeed(static_cast<int>(seed % 0x7FFF'FFFFu) + 1);
  context->fatalOnError(true);
  return context;
}

uint64_t get_bits(const uint32_t* words, unsigned lsb, unsigned width) {
  uint64_t v = 0;
  for (unsigned i = 0; i < width; ++i) {
    const unsigned bit = lsb + i;
    v |= static_cast<uint64_t>((words[bit / 32] >> (bit % 32)) & 1u) << i;
  }
  return v;
}

void set_bits(uint32_t* words, unsigned lsb, unsigned width, uint64_t value) {
  for (unsigned i = 0; i < width; ++i) {
    const unsigned bit = lsb + i;
    const uint32_t mask = 1u << (bit % 32);
    if ((value >> i) & 1u) {
      words[bit / 32] |= mask;
    } else {
      words[bit / 32] &= ~mask;
    }
  }
}

std::string hex32(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  char buf[64];
  std::snprintf(buf, sizeof buf, "0x%08x (%.9g)", bits, static_cast<double>(f));
  return buf;
}

bool same_f32(uint32_t rtl, uint32_t golden) {
  const bool rtl_nan = (rtl & 0x7F80'0000u) == 0x7F80'0000u && (rtl & 0x007F'FFFFu) != 0;
  const bool golden_nan = (golden & 0x7F80'0000u) == 0x7F80'0000u && (golden & 0x007F'FFFFu) != 0;
  if (golden_nan) return rtl_nan;
  return rtl == golden;
}

}  // namespace nibble::rtl_test
