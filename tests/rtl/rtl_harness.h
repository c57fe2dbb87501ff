// Shared harness for the Verilated RTL tests: seeds, randomized reset, optional FST
// waveforms, clocking, and access to wide (packed) ports.
//
//   NIBBLE_RTL_SEED=<n>   seed of the test's random cases and of Verilator's randomized
//                         initial values (--x-initial unique); default kDefaultSeed. Every
//                         test prints the seed it used.
//   NIBBLE_RTL_FST=<dir>  write an FST waveform of every clocked test to <dir>/<test>.fst
#pragma once

#include <verilated.h>
#include <verilated_fst_c.h>

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <type_traits>

namespace nibble::rtl_test {

inline constexpr uint64_t kDefaultSeed = 0x5EED'2026u;

// The seed for this test (NIBBLE_RTL_SEED or the default), printed with the test's name.
uint64_t test_seed();

// A simulation context whose randomized reset values (X's made 2-state) come from `seed`.
std::unique_ptr<VerilatedContext> make_context(uint64_t seed);

// Bits [lsb, lsb + width) of a packed port (width <= 64), and their assignment. Verilator
// stores ports wider than 64 bits as arrays of 32-bit words, narrower ones as integers;
// these take the word array (or the address of the integer, reinterpreted).
uint64_t get_bits(const uint32_t* words, unsigned lsb, unsigned width);
void set_bits(uint32_t* words, unsigned lsb, unsigned width, uint64_t value);

inline uint64_t low_mask(unsigned width) { return width >= 64 ? ~uint64_t{0} : (uint64_t{1} << width) - 1u; }

// Field access for any port type: integers (CData..QData) or VlWide.
template <class Port>
uint64_t field(const Port& port, unsigned lsb, unsigned width) {
  if constexpr (std::is_integral_v<Port>) {
    return (static_cast<uint64_t>(port) >> lsb) & low_mask(width);
  } else {
    return get_bits(port.data(), lsb, width);
  }
}
template <class Port>
void set_field(Port& port, unsigned lsb, unsigned width, uint64_t value) {
  if constexpr (std::is_integral_v<Port>) {
    const uint64_t mask = low_mask(width) << lsb;
    port = static_cast<Port>((static_cast<uint64_t>(port) & ~mask) | ((value << lsb) & mask));
  } else {
    set_bits(port.data(), lsb, width, value);
  }
}

// A clocked model with clk_i / rst_ni, an optional FST trace, and a cycle counter.
template <class Model>
class ClockedSim {
 public:
  explicit ClockedSim(uint64_t seed) : context_(make_context(seed)) {
    const char* dir = std::getenv("NIBBLE_RTL_FST");
    if (dir != nullptr && *dir != '\0') context_->traceEverOn(true);
    model_ = std::make_unique<Model>(context_.get());
    if (dir != nullptr && *dir != '\0') {
      trace_ = std::make_unique<VerilatedFstC>();
      model_->trace(trace_.get(), 99);
      trace_->open((std::string(dir) + "/" + trace_name() + ".fst").c_str());
    }
  }
  ~ClockedSim() {
    if (trace_) trace_->close();
    model_->final();
  }
  Model* operator->() { return model_.get(); }
  Model& model() { return *model_; }

  // Hold reset for a few cycles with the clock running.
  void reset() {
    model_->clk_i = 0;
    model_->rst_ni = 0;
    for (int i = 0; i < 3; ++i) tick();
    model_->rst_ni = 1;
  }
  // Evaluate the inputs set since the last edge (combinational outputs settle), then one
  // rising edge. Outputs read after tick() are those of the new cycle.
  void settle() { model_->eval(); }
  void tick() {
    model_->clk_i = 0;
    model_->eval();
    dump();
    context_->timeInc(5);
    model_->clk_i = 1;
    model_->eval();
    dump();
    context_->timeInc(5);
    ++cycles_;
  }
  uint64_t cycles() const { return cycles_; }

 private:
  static std::string trace_name();
  void dump() {
    if (trace_) trace_->dump(context_->time());
  }
  std::unique_ptr<VerilatedContext> context_;
  std::unique_ptr<Model> model_;
  std::unique_ptr<VerilatedFstC> trace_;
  uint64_t cycles_ = 0;
};

std::string current_test_name();

template <class Model>
std::string ClockedSim<Model>::trace_name() {
  return current_test_name();
}

// "0x%08x" of a binary32 pattern (and the value) for failure messages.
std::string hex32(uint32_t bits);

// Bit-exact equality of binary32 results, NaN compared by NaN-ness (golden's host float
// operations produce NaNs with payloads the RTL's canonical NaN does not keep).
bool same_f32(uint32_t rtl, uint32_t golden);

}  // namespace nibble::rtl_test
