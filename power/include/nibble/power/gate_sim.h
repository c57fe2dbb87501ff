// Gate-level simulation of a synthesized netlist, for Nibble's energy estimator and for
// checking the synthesized netlist against golden.
//
// Inputs: the mapped netlist as Yosys writes it (`write_json`, rtl/synth/nibble_synth.py
// --netlist) and the cell models that rtl/synth/liberty_cells.py derives from the same Liberty
// file (each output's `function` as a truth table, flops from their `ff` group, pin
// capacitances, internal energies, leakage). Simulation is cycle-based and zero-delay: every
// cycle the combinational cells settle in topological order, then every flop takes its
// next state on the one clock's rising edge (asynchronous clear/preset act at once). Each
// settled value change of a cell output counts one toggle; glitches are not modeled (a
// zero-delay simulation has none), so activity is a lower bound of the real one.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace nibble::power {

class NetlistError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Energy of a run, in the library's units (pJ for a real Liberty library; E_NAND2, the energy
// of one NAND2 output toggle, for nibble_generic.lib).
struct EnergyReport {
  std::string unit;           // "pJ" or "E_NAND2"
  uint64_t cycles = 0;
  uint64_t toggles = 0;       // cell-output toggles (combinational and flop outputs)
  double logic = 0;           // combinational cells: output toggles (+ input pins, load)
  double flops = 0;           // flop output and data-pin toggles
  double clock = 0;           // flop clock pins, every cycle
  double leakage = 0;         // sum of cell leakage x cycles x clock period (0 for generic)
  double total() const { return logic + flops + clock + leakage; }
  double toggle_rate = 0;     // toggles per cell output per cycle
};

class GateSim {
 public:
  // cells_json: liberty_cells.py output; netlist_json: Yosys write_json of the top module.
  GateSim(const std::string& cells_json, const std::string& netlist_json);

  int port_width(const std::string& port) const;
  std::vector<std::string> input_ports() const;
  // Sets bits [lsb, lsb + width) of an input port (width <= 64).
  void set_input(const std::string& port, uint64_t value, int lsb = 0, int width = -1);
  // Bits [lsb, lsb + width) of a port (width <= 64), after the last settle()/tick().
  uint64_t get(const std::string& port, int lsb = 0, int width = -1) const;

  void settle();  // propagate inputs through the logic (and asynchronous flop controls)
  void tick();    // settle, rising clock edge, settle

  void clear_activity();
  EnergyReport energy(double clock_period_ns) const;
  // The energy of the run split by cell: group(cell name, is_flop) names each cell's group
  // (a hierarchical netlist flattened after mapping keeps each cell's instance path in its
  // name). Primary-input pins go to the group named "inputs". The groups' totals add up to
  // energy(); each report's toggle_rate is that of its group's cell outputs.
  std::map<std::string, EnergyReport> energy_by(
      const std::function<std::string(const std::string& cell, bool flop)>& group, double clock_period_ns) const;
  // The energy model at a uniform activity instead of simulated toggles: every cell output
  // (and primary input) toggles `rate` times per cycle, for `cycles` cycles (vectorless, as
  // OpenSTA's set_power_activity -global does).
  EnergyReport energy_at_rate(double rate, uint64_t cycles, double clock_period_ns) const;

  size_t num_cells() const { return num_cells_; }
  size_t num_flops() const { return flops_.size(); }
  double total_leakage() const { return leakage_sum_; }  // library leakage unit
  const std::string& library() const { return library_; }
  bool generic() const { return generic_; }

 private:
  struct Gate {  // one combinational cell output
    uint32_t out;
    uint8_t nin;
    uint32_t in[6];
    uint64_t lut;
    double energy;  // per output toggle: internal + load (+ fanout pins)
    uint32_t cell;  // index into cell_names_
  };
  struct Flop {
    uint32_t d_nin, clr_nin, pre_nin;
    uint32_t d_in[6], clr_in[6], pre_in[6];
    uint64_t d_lut, clr_lut, pre_lut;
    bool has_clr, has_pre;
    std::vector<std::pair<uint32_t, bool>> outs;  // net, inverted
    uint8_t state = 0, next = 0;
    double out_energy = 0, clock_energy = 0;
    uint32_t cell = 0;
  };
  struct Port {
    bool input;
    std::vector<uint32_t> bits;
  };
  uint8_t eval_lut(uint64_t lut, uint32_t n, const uint32_t* in) const;
  void eval_logic();
  bool apply_async();
  const Port& port(const std::string& name) const;

  std::string library_;
  bool generic_ = false;
  double voltage_ = 1;
  double leak_to_pj_per_ns_ = 0;  // leakage unit x ns -> pJ
  double leakage_sum_ = 0;
  size_t num_cells_ = 0;
  std::vector<std::string> cell_names_;
  std::vector<bool> cell_is_flop_;
  std::vector<double> cell_leakage_;
  std::vector<uint8_t> value_;
  std::vector<Gate> gates_;  // topological order
  std::vector<Flop> flops_;
  std::vector<uint64_t> gate_toggles_;
  std::vector<uint64_t> flop_toggles_;
  std::vector<double> input_net_energy_;  // per primary-input net toggle (fanout pins, load)
  std::vector<uint32_t> input_nets_;
  std::vector<uint8_t> input_prev_;
  std::vector<uint64_t> input_toggles_;
  uint64_t cycles_ = 0;
  std::map<std::string, Port> ports_;
};

}  // namespace nibble::power
