// The C++ harness of tb_golden_dpi: clock, reset, and the end of the run. The seed
// (+seed=<n>, default 0x5eed2026) also seeds Verilator's random initial register values.
#include <verilated.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "Vtb_golden_dpi.h"

int main(int argc, char** argv) {
  auto ctx = std::make_unique<VerilatedContext>();
  ctx->commandArgs(argc, argv);
  const std::string arg = ctx->commandArgsPlusMatch("seed=");
  const unsigned long long seed = arg.empty() ? 0x5eed2026ull : std::strtoull(arg.c_str() + 6, nullptr, 0);
  ctx->randReset(2);
  ctx->randSeed(static_cast<int>(seed & 0x7fffffff));
  auto tb = std::make_unique<Vtb_golden_dpi>(ctx.get());

  const long kMaxCycles = 100000;
  tb->clk_i = 0;
  tb->rst_ni = 0;
  long cycle = 0;
  for (; cycle < kMaxCycles && !ctx->gotFinish(); ++cycle) {
    if (cycle == 4) tb->rst_ni = 1;
    tb->clk_i = 0;
    tb->eval();
    ctx->timeInc(1);
    tb->clk_i = 1;
    tb->eval();
    ctx->timeInc(1);
  }
  tb->final();
  if (!ctx->gotFinish()) {
    std::fprintf(stderr, "tb_golden_dpi: no $finish after %ld cycles\n", cycle);
    return 1;
  }
  return 0;
}
