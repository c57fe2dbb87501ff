// Gate-level, cycle-based, zero-delay simulation of a Yosys JSON netlist (see gate_sim.h).
#include "nibble/power/gate_sim.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <queue>
#include <regex>

#include "nibble/io/json.h"

namespace nibble::power {
namespace {

using nlohmann::json;

json read_json(const std::string& path) {
  try {
    return io::read_json_file(path);
  } catch (const io::JsonError& e) {
    throw NetlistError(e.what());
  }
}

double interp(const json& xs, const json& ys, double x) {
  const size_t n = xs.size();
  if (n == 0) return 0;
  if (n == 1) return ys[0].get<double>();
  size_t i = 0;
  if (x >= xs[n - 1].get<double>()) {
    i = n - 2;
  } else {
    while (i + 2 < n && xs[i + 1].get<double>() <= x) ++i;
  }
  const double x0 = xs[i].get<double>(), x1 = xs[i + 1].get<double>();
  const double t = (x - x0) / (x1 - x0);
  return ys[i].get<double>() + t * (ys[i + 1].get<double>() - ys[i].get<double>());
}

// "1nW" -> watts; "1ns" -> seconds.
double unit_value(const std::string& s, const char* base) {
  std::smatch m;
  const std::regex re(std::string(R"(\s*([0-9.eE+-]+)\s*([munpf]?))") + base + R"(\s*)");
  if (!std::regex_match(s, m, re)) throw NetlistError(fmt::format("unknown unit '{}'", s));
  double v = std::stod(m[1].str());
  const std::string p = m[2].str();
  const double scale = p == "m" ? 1e-3 : p == "u" ? 1e-6 : p == "n" ? 1e-9 : p == "p" ? 1e-12 : p == "f" ? 1e-15 : 1;
  return v * scale;
}

}  // namespace

GateSim::GateSim(const std::string& cells_json, const std::string& netlist_json) {
  const json lib = read_json(cells_json);
  const json nl = read_json(netlist_json);
  library_ = lib.at("library").get<std::string>();
  voltage_ = lib.at("voltage").get<double>();
  const json& cells = lib.at("cells");
  generic_ = cells.contains("NAND2") && cells.at("NAND2").contains("toggle_energy");
  // pJ per (cap unit x V^2): pf -> 1, ff -> 1e-3
  const std::string cu = lib.at("capacitive_load_unit")[1].get<std::string>();
  const double cap_to_pf = lib.at("capacitive_load_unit")[0].get<double>() * (cu == "ff" ? 1e-3 : 1.0);
  leak_to_pj_per_ns_ = unit_value(lib.at("leakage_power_unit").get<std::string>(), "W") * 1e-9 / 1e-12;

  // The top module: the one with cells that is not a library cell.
  const json* top = nullptr;
  for (const auto& [name, m] : nl.at("modules").items()) {
    if (cells.contains(name)) continue;
    if (m.contains("attributes") && m["attributes"].contains("blackbox")) continue;
    if (m.contains("cells") && !m["cells"].empty()) {
      if (top != nullptr) throw NetlistError("netlist has several modules with cells (not flattened?)");
      top = &m;
    }
  }
  if (top == nullptr) throw NetlistError(fmt::format("{}: no module with cells", netlist_json));

  // Nets: Yosys bit ids, plus two constants.
  uint32_t max_id = 0;
  auto scan = [&](const json& bits) {
    for (const json& b : bits) {
      if (b.is_number()) max_id = std::max(max_id, b.get<uint32_t>());
    }
  };
  for (const auto& [n, p] : top->at("ports").items()) scan(p.at("bits"));
  for (const auto& [n, c] : top->at("cells").items()) {
    for (const auto& [pin, bits] : c.at("connections").items()) scan(bits);
  }
  const uint32_t kZero = max_id + 1, kOne = max_id + 2;
  const uint32_t nnets = max_id + 3;
  value_.assign(nnets, 0);
  value_[kOne] = 1;
  auto net_of = [&](const json& b) -> uint32_t {
    if (b.is_number()) return b.get<uint32_t>();
    const std::string s = b.get<std::string>();
    return s == "1" ? kOne : kZero;  // "x"/"z" read as 0
  };
  for (const auto& [n, p] : top->at("ports").items()) {
    Port port;
    port.input = p.at("direction").get<std::string>() == "input";
    for (const json& b : p.at("bits")) port.bits.push_back(net_of(b));
    ports_[n] = port;
  }

  // Loads: capacitance and input-pin energy of every net's fanout pins.
  std::vector<double> load_cap(nnets, 0.0), fanout_energy(nnets, 0.0);
  for (const auto& item : top->at("cells").items()) {
    // A plain reference, not a structured binding: C++17 lambdas cannot capture bindings.
    const std::string& n = item.key();
    const json& c = item.value();
    const std::string type = c.at("type").get<std::string>();
    if (!cells.contains(type)) {
      if (lib.at("skipped").contains(type)) {
        throw NetlistError(fmt::format("cell {} ({}) has no simulation model: {}", n, type,
                                       lib["skipped"][type].get<std::string>()));
      }
      throw NetlistError(fmt::format("cell {} of unknown type {}", n, type));
    }
    for (const json& pin : cells[type].at("inputs")) {
      if (pin.value("clock", false)) continue;
      const std::string pn = pin.at("name").get<std::string>();
      if (!c.at("connections").contains(pn)) continue;
      const uint32_t net = net_of(c["connections"][pn][0]);
      load_cap[net] += pin.at("cap").get<double>();
      fanout_energy[net] += pin.at("energy").get<double>();
    }
  }

  // Cells -> gates and flops.
  std::vector<int> driver(nnets, -1);  // gate index
  std::vector<bool> is_source(nnets, false);
  is_source[kZero] = is_source[kOne] = true;
  for (const auto& [n, p] : ports_) {
    if (p.input) {
      for (uint32_t b : p.bits) {
        is_source[b] = true;
        if (b != kZero && b != kOne) input_nets_.push_back(b);
      }
    }
  }
  std::vector<Gate> gates;
  uint32_t clock_net = UINT32_MAX;
  for (const auto& item : top->at("cells").items()) {
    // A plain reference, not a structured binding: C++17 lambdas cannot capture bindings.
    const std::string& n = item.key();
    const json& c = item.value();
    const std::string type = c.at("type").get<std::string>();
    const json& cm = cells[type];
    const json& conn = c.at("connections");
    const uint32_t cell = static_cast<uint32_t>(num_cells_++);
    leakage_sum_ += cm.at("leakage").get<double>();
    cell_names_.push_back(n);
    cell_is_flop_.push_back(!cm.at("ff").is_null());
    cell_leakage_.push_back(cm.at("leakage").get<double>());
    auto pins = [&](const json& names, uint32_t* out) {
      if (names.size() > 6) throw NetlistError(fmt::format("cell {} ({}): more than 6 inputs", n, type));
      uint32_t k = 0;
      for (const json& pn : names) {
        const std::string s = pn.get<std::string>();
        if (!conn.contains(s)) throw NetlistError(fmt::format("cell {} ({}): pin {} unconnected", n, type, s));
        out[k++] = net_of(conn[s][0]);
      }
      return k;
    };
    auto out_energy = [&](const json& o, uint32_t net) {
      if (cm.contains("toggle_energy")) return cm["toggle_energy"].get<double>();
      const double c_load = load_cap[net];
      return interp(o.at("loads"), o.at("energies"), c_load) + 0.5 * c_load * cap_to_pf * voltage_ * voltage_ +
             fanout_energy[net];
    };
    if (cm.at("ff").is_null()) {
      for (const json& o : cm.at("outputs")) {
        const std::string on = o.at("name").get<std::string>();
        if (!conn.contains(on)) continue;
        Gate g{};
        g.out = net_of(conn[on][0]);
        g.nin = static_cast<uint8_t>(pins(o.at("inputs"), g.in));
        g.lut = o.at("lut").get<uint64_t>();
        g.energy = out_energy(o, g.out);
        g.cell = cell;
        if (driver[g.out] >= 0 || is_source[g.out]) throw NetlistError(fmt::format("net {} has several drivers", g.out));
        driver[g.out] = static_cast<int>(gates.size());
        gates.push_back(g);
      }
    } else {
      const json& ff = cm["ff"];
      Flop f{};
      f.cell = cell;
      f.d_nin = pins(ff.at("next").at("inputs"), f.d_in);
      f.d_lut = ff["next"]["lut"].get<uint64_t>();
      f.has_clr = !ff.at("clear").is_null();
      f.has_pre = !ff.at("preset").is_null();
      if (f.has_clr) {
        f.clr_nin = pins(ff["clear"].at("inputs"), f.clr_in);
        f.clr_lut = ff["clear"]["lut"].get<uint64_t>();
      }
      if (f.has_pre) {
        f.pre_nin = pins(ff["preset"].at("inputs"), f.pre_in);
        f.pre_lut = ff["preset"]["lut"].get<uint64_t>();
      }
      const std::string ck = ff.at("clock").get<std::string>();
      if (!conn.contains(ck)) throw NetlistError(fmt::format("flop {} has no clock", n));
      const uint32_t cn = net_of(conn[ck][0]);
      if (clock_net == UINT32_MAX) clock_net = cn;
      if (cn != clock_net) throw NetlistError("flops on more than one clock net");
      for (const json& o : cm.at("outputs")) {
        const std::string on = o.at("name").get<std::string>();
        if (!conn.contains(on)) continue;
        const uint32_t net = net_of(conn[on][0]);
        if (driver[net] >= 0 || is_source[net]) throw NetlistError(fmt::format("net {} has several drivers", net));
        is_source[net] = true;
        f.outs.emplace_back(net, o.at("ff_out").get<std::string>() == "IQN");
        f.out_energy += out_energy(o, net);
      }
      if (cm.contains("clock_energy")) {
        f.clock_energy = cm["clock_energy"].get<double>();
      } else {
        for (const json& pin : cm.at("inputs")) {
          if (pin.at("name").get<std::string>() == ck) {
            const double cap = pin.at("cap").get<double>() * cap_to_pf;
            f.clock_energy = 2 * pin.at("energy").get<double>() + cap * voltage_ * voltage_;
          }
        }
      }
      flops_.push_back(std::move(f));
    }
  }
  input_net_energy_.resize(input_nets_.size());
  for (size_t i = 0; i < input_nets_.size(); ++i) {
    const uint32_t net = input_nets_[i];
    input_net_energy_[i] =
        generic_ ? 0.0 : 0.5 * load_cap[net] * cap_to_pf * voltage_ * voltage_ + fanout_energy[net];
  }
  if (clock_net != UINT32_MAX) is_source[clock_net] = true;

  // Topological order (Kahn) over gates.
  std::vector<std::vector<uint32_t>> fanout(nnets);
  std::vector<uint32_t> pending(gates.size(), 0);
  for (size_t gi = 0; gi < gates.size(); ++gi) {
    for (uint32_t k = 0; k < gates[gi].nin; ++k) {
      const uint32_t net = gates[gi].in[k];
      if (driver[net] >= 0) {
        fanout[net].push_back(static_cast<uint32_t>(gi));
        ++pending[gi];
      } else if (!is_source[net]) {
        throw NetlistError(fmt::format("net {} (input of a cell) has no driver", net));
      }
    }
  }
  std::queue<uint32_t> ready;
  for (size_t gi = 0; gi < gates.size(); ++gi) {
    if (pending[gi] == 0) ready.push(static_cast<uint32_t>(gi));
  }
  while (!ready.empty()) {
    const uint32_t gi = ready.front();
    ready.pop();
    gates_.push_back(gates[gi]);
    for (uint32_t f : fanout[gates[gi].out]) {
      if (--pending[f] == 0) ready.push(f);
    }
  }
  if (gates_.size() != gates.size()) throw NetlistError("combinational loop in the netlist");
  gate_toggles_.assign(gates_.size(), 0);
  flop_toggles_.assign(flops_.size(), 0);
  input_toggles_.assign(input_nets_.size(), 0);
  input_prev_.assign(input_nets_.size(), 0);
  for (const auto& [n, p] : ports_) {
    if (!p.input) {
      for (uint32_t b : p.bits) {
        if (driver[b] < 0 && !is_source[b]) throw NetlistError(fmt::format("output {} has an undriven bit", n));
      }
    }
  }
  settle();
  clear_activity();
}

const GateSim::Port& GateSim::port(const std::string& name) const {
  auto it = ports_.find(name);
  if (it == ports_.end()) throw NetlistError(fmt::format("netlist has no port {}", name));
  return it->second;
}

std::vector<std::string> GateSim::input_ports() const {
  std::vector<std::string> out;
  for (const auto& [n, p] : ports_) {
    if (p.input) out.push_back(n);
  }
  return out;
}

int GateSim::port_width(const std::string& p) const { return static_cast<int>(port(p).bits.size()); }

void GateSim::set_input(const std::string& name, uint64_t v, int lsb, int width) {
  const Port& p = port(name);
  if (!p.input) throw NetlistError(fmt::format("{} is not an input", name));
  if (width < 0) width = static_cast<int>(p.bits.size()) - lsb;
  if (lsb < 0 || width > 64 || lsb + width > static_cast<int>(p.bits.size())) {
    throw NetlistError(fmt::format("{}: bits [{}, {}) out of range", name, lsb, lsb + width));
  }
  for (int i = 0; i < width; ++i) value_[p.bits[lsb + i]] = static_cast<uint8_t>((v >> i) & 1u);
}

uint64_t GateSim::get(const std::string& name, int lsb, int width) const {
  const Port& p = port(name);
  if (width < 0) width = static_cast<int>(p.bits.size()) - lsb;
  if (lsb < 0 || width > 64 || lsb + width > static_cast<int>(p.bits.size())) {
    throw NetlistError(fmt::format("{}: bits [{}, {}) out of range", name, lsb, lsb + width));
  }
  uint64_t v = 0;
  for (int i = 0; i < width; ++i) v |= static_cast<uint64_t>(value_[p.bits[lsb + i]]) << i;
  return v;
}

uint8_t GateSim::eval_lut(uint64_t lut, uint32_t n, const uint32_t* in) const {
  uint32_t idx = 0;
  for (uint32_t k = 0; k < n; ++k) idx |= static_cast<uint32_t>(value_[in[k]]) << k;
  return static_cast<uint8_t>((lut >> idx) & 1u);
}

void GateSim::eval_logic() {
  for (size_t i = 0; i < input_nets_.size(); ++i) {
    const uint8_t v = value_[input_nets_[i]];
    input_toggles_[i] += v != input_prev_[i];
    input_prev_[i] = v;
  }
  for (size_t gi = 0; gi < gates_.size(); ++gi) {
    const Gate& g = gates_[gi];
    const uint8_t v = eval_lut(g.lut, g.nin, g.in);
    gate_toggles_[gi] += v != value_[g.out];
    value_[g.out] = v;
  }
}

bool GateSim::apply_async() {
  bool changed = false;
  for (size_t i = 0; i < flops_.size(); ++i) {
    Flop& f = flops_[i];
    uint8_t s = f.state;
    if (f.has_clr && eval_lut(f.clr_lut, f.clr_nin, f.clr_in)) {
      s = 0;
    } else if (f.has_pre && eval_lut(f.pre_lut, f.pre_nin, f.pre_in)) {
      s = 1;
    }
    if (s != f.state) {
      f.state = s;
      ++flop_toggles_[i];
      for (const auto& [net, inv] : f.outs) value_[net] = static_cast<uint8_t>(s ^ (inv ? 1 : 0));
      changed = true;
    }
  }
  return changed;
}

void GateSim::settle() {
  eval_logic();
  for (int it = 0; it < 4 && apply_async(); ++it) eval_logic();
}

void GateSim::tick() {
  settle();
  for (Flop& f : flops_) f.next = eval_lut(f.d_lut, f.d_nin, f.d_in);
  for (size_t i = 0; i < flops_.size(); ++i) {
    Flop& f = flops_[i];
    const bool held = (f.has_clr && eval_lut(f.clr_lut, f.clr_nin, f.clr_in)) ||
                      (f.has_pre && eval_lut(f.pre_lut, f.pre_nin, f.pre_in));
    if (held || f.next == f.state) continue;
    f.state = f.next;
    ++flop_toggles_[i];
    for (const auto& [net, inv] : f.outs) value_[net] = static_cast<uint8_t>(f.state ^ (inv ? 1 : 0));
  }
  ++cycles_;
  settle();
}

void GateSim::clear_activity() {
  std::fill(gate_toggles_.begin(), gate_toggles_.end(), 0);
  std::fill(flop_toggles_.begin(), flop_toggles_.end(), 0);
  std::fill(input_toggles_.begin(), input_toggles_.end(), 0);
  cycles_ = 0;
}

EnergyReport GateSim::energy(double clock_period_ns) const {
  EnergyReport r;
  r.unit = generic_ ? "E_NAND2" : "pJ";
  r.cycles = cycles_;
  for (size_t gi = 0; gi < gates_.size(); ++gi) {
    r.logic += static_cast<double>(gate_toggles_[gi]) * gates_[gi].energy;
    r.toggles += gate_toggles_[gi];
  }
  for (size_t i = 0; i < input_nets_.size(); ++i) r.logic += static_cast<double>(input_toggles_[i]) * input_net_energy_[i];
  size_t outs = gates_.size();
  for (size_t i = 0; i < flops_.size(); ++i) {
    r.flops += static_cast<double>(flop_toggles_[i]) * flops_[i].out_energy;
    r.toggles += flop_toggles_[i];
    r.clock += static_cast<double>(cycles_) * flops_[i].clock_energy;
    outs += 1;
  }
  r.leakage = generic_ ? 0.0 : leakage_sum_ * leak_to_pj_per_ns_ * clock_period_ns * static_cast<double>(cycles_);
  r.toggle_rate = cycles_ == 0 || outs == 0 ? 0.0 : static_cast<double>(r.toggles) / (static_cast<double>(outs) * static_cast<double>(cycles_));
  return r;
}

std::map<std::string, EnergyReport> GateSim::energy_by(
    const std::function<std::string(const std::string& cell, bool flop)>& group, double clock_period_ns) const {
  std::vector<std::string> of_cell(num_cells_);
  for (size_t c = 0; c < num_cells_; ++c) of_cell[c] = group(cell_names_[c], cell_is_flop_[c]);
  std::map<std::string, EnergyReport> out;
  std::map<std::string, uint64_t> outs;  // cell outputs per group
  auto at = [&](const std::string& g) -> EnergyReport& {
    EnergyReport& r = out[g];
    r.unit = generic_ ? "E_NAND2" : "pJ";
    r.cycles = cycles_;
    return r;
  };
  for (size_t gi = 0; gi < gates_.size(); ++gi) {
    EnergyReport& r = at(of_cell[gates_[gi].cell]);
    r.logic += static_cast<double>(gate_toggles_[gi]) * gates_[gi].energy;
    r.toggles += gate_toggles_[gi];
    ++outs[of_cell[gates_[gi].cell]];
  }
  if (!input_nets_.empty()) {
    EnergyReport& r = at("inputs");
    for (size_t i = 0; i < input_nets_.size(); ++i) {
      r.logic += static_cast<double>(input_toggles_[i]) * input_net_energy_[i];
    }
  }
  for (size_t i = 0; i < flops_.size(); ++i) {
    EnergyReport& r = at(of_cell[flops_[i].cell]);
    r.flops += static_cast<double>(flop_toggles_[i]) * flops_[i].out_energy;
    r.toggles += flop_toggles_[i];
    r.clock += static_cast<double>(cycles_) * flops_[i].clock_energy;
    ++outs[of_cell[flops_[i].cell]];
  }
  if (!generic_) {
    for (size_t c = 0; c < num_cells_; ++c) {
      at(of_cell[c]).leakage += cell_leakage_[c] * leak_to_pj_per_ns_ * clock_period_ns * static_cast<double>(cycles_);
    }
  }
  for (auto& [g, r] : out) {
    const uint64_t n = outs[g];
    r.toggle_rate = cycles_ == 0 || n == 0 ? 0.0 : static_cast<double>(r.toggles) / (static_cast<double>(n) * static_cast<double>(cycles_));
  }
  return out;
}

EnergyReport GateSim::energy_at_rate(double rate, uint64_t cycles, double clock_period_ns) const {
  EnergyReport r;
  r.unit = generic_ ? "E_NAND2" : "pJ";
  r.cycles = cycles;
  const double n = rate * static_cast<double>(cycles);
  for (const Gate& g : gates_) r.logic += n * g.energy;
  for (double e : input_net_energy_) r.logic += n * e;
  for (const Flop& f : flops_) {
    r.flops += n * f.out_energy;
    r.clock += static_cast<double>(cycles) * f.clock_energy;
  }
  r.leakage = generic_ ? 0.0 : leakage_sum_ * leak_to_pj_per_ns_ * clock_period_ns * static_cast<double>(cycles);
  r.toggle_rate = rate;
  return r;
}

}  // namespace nibble::power
