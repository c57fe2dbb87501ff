// `nibble quant`: shrinkage-bias diagnostics. Quantizes synthetic or user
// tensors under a matrix of formats x scale modes x block shapes x RHT x
// rounding with the golden model and reports what each did to the tensor
// (nibble/stats.h defines every metric); optionally runs the compounding chain
// (nibble/analysis/chain.h). This file turns options into specs, checks them,
// and renders the results; the computing is in the analysis library.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <array>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "commands.h"
#include "nibble/analysis/chain.h"
#include "nibble/analysis/quant_matrix.h"
#include "nibble/analysis/render.h"
#include "nibble/analysis/synthetic.h"
#include "nibble/io/tensor_file.h"
#include "nibble/limits.h"
#include "nibble/scale.h"

namespace nibble::cli {
namespace {

// The names of a golden list (kAllFormats, kAllScaleModes): the default is every one.
template <class List>
std::vector<std::string> names_of(const List& list) {
  std::vector<std::string> out;
  for (const auto& v : list) out.emplace_back(name(v));
  return out;
}

struct QuantOptions {
  std::string input = "gaussian";
  std::string tensor_path;
  std::string tensor_name;
  int64_t rows = 256;
  int64_t cols = 256;
  std::vector<std::string> formats = names_of(kAllFormats);
  std::vector<std::string> scales = names_of(kAllScaleModes);
  std::vector<std::string> blocks = {"1x16", "1x32", "16x16"};
  std::vector<std::string> rht = {"off", "16"};
  std::vector<std::string> roundings = {"rne", "sr"};
  int sr_bits = 8;
  uint64_t seed = 0;
  std::string zero = "positive";
  std::string nonfinite = "finite";
  int chain_layers = 0;  // read only when --chain was given
  int64_t chain_width = 256;
  int64_t chain_batch = 64;
  std::string json_path;
  std::string csv_path;
  bool levels = false;
};

template <typename Names>
std::string joined(const Names& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + std::string(n);
  return out;
}

// Parses every name in `given` with `parse`; an unknown one is a usage error
// that lists the valid spellings (the names of `all`).
template <typename T, typename All, typename Parse>
std::vector<T> parse_names(const std::vector<std::string>& given, const All& all, Parse parse, const char* what) {
  std::vector<T> out;
  for (const std::string& n : given) {
    const std::optional<T> v = parse(n);
    if (!v) {
      std::vector<std::string> valid;
      for (T t : all) valid.emplace_back(name(t));
      throw UsageError(fmt::format("unknown {} '{}'; valid: {}", what, n, joined(valid)));
    }
    out.push_back(*v);
  }
  return out;
}

std::vector<int> parse_rht_sizes(const std::vector<std::string>& given) {
  std::vector<int> out;
  for (const std::string& n : given) {
    std::optional<int> size;
    if (n == "off") size = 0;
    for (int s : kRhtSizes) {
      if (n == std::to_string(s)) size = s;
    }
    if (!size) throw UsageError(fmt::format("unknown RHT setting '{}'; valid: off, 16, 32, 64, 128", n));
    out.push_back(*size);
  }
  return out;
}

analysis::MatrixSpec matrix_spec(const QuantOptions& o) {
  analysis::MatrixSpec spec;
  spec.formats = parse_names<Format>(o.formats, kAllFormats, parse_format, "format");
  spec.scales = parse_names<ScaleMode>(o.scales, kAllScaleModes, parse_scale_mode, "scale mode");
  spec.blocks = parse_names<BlockShape>(o.blocks, kAllBlockShapes, parse_block_shape, "block shape");
  spec.rht_sizes = parse_rht_sizes(o.rht);
  spec.roundings = parse_names<Rounding>(o.roundings, kAllRoundings, parse_rounding, "rounding");
  if (o.sr_bits < 1 || o.sr_bits > 8) throw UsageError(fmt::format("--sr-bits must be in 1..8, got {}", o.sr_bits));
  spec.sr_bits = o.sr_bits;
  spec.seed = o.seed;
  const std::optional<ZeroPolicy> zero = parse_zero_policy(o.zero);
  const std::optional<NonFinitePolicy> nonfinite = parse_nonfinite_policy(o.nonfinite);
  if (!zero) throw UsageError(fmt::format("--zero: unknown policy '{}'; valid: positive, signed", o.zero));
  if (!nonfinite) {
    throw UsageError(fmt::format("--nonfinite: unknown policy '{}'; valid: finite, propagate", o.nonfinite));
  }
  spec.policy = QuantPolicy{*zero, *nonfinite};
  return spec;
}

// A user tensor viewed as [rows, cols] (last axis = contraction axis), its
// non-finite elements set to 0 and counted (analysis::zero_nonfinite).
struct LoadedTensor {
  analysis::NamedTensor tensor;
  size_t nonfinite = 0;
};

LoadedTensor load_user_tensor(const QuantOptions& o) {
  note_input(o.tensor_path, "--tensor");
  io::Tensor t = io::read_tensor(o.tensor_path, o.tensor_name);
  if (t.numel() <= 0 || t.rows() <= 0 || t.cols() <= 0) {
    throw UsageError(fmt::format("{}: tensor '{}' is empty", o.tensor_path, t.name));
  }
  LoadedTensor out;
  out.tensor = {t.name, t.rows(), t.cols(), std::move(t.data)};
  try {
    out.nonfinite = analysis::zero_nonfinite(out.tensor);
  } catch (const std::invalid_argument& e) {
    throw UsageError(fmt::format("{}: {}", o.tensor_path, e.what()));
  }
  return out;
}

std::vector<LoadedTensor> load_inputs(const QuantOptions& o) {
  if (!o.tensor_path.empty()) return {load_user_tensor(o)};
  if (o.rows <= 0) throw UsageError(fmt::format("--rows must be positive, got {}", o.rows));
  if (o.cols <= 0) throw UsageError(fmt::format("--cols must be positive, got {}", o.cols));
  std::vector<analysis::Distribution> dists;
  if (o.input == "all") {
    dists.assign(analysis::kAllDistributions.begin(), analysis::kAllDistributions.end());
  } else if (const std::optional<analysis::Distribution> d = analysis::parse_distribution(o.input)) {
    dists.push_back(*d);
  } else {
    std::vector<std::string> valid;
    for (analysis::Distribution v : analysis::kAllDistributions) valid.emplace_back(name(v));
    throw UsageError(fmt::format("unknown input '{}'; valid: {}, all", o.input, joined(valid)));
  }
  checked_elements({static_cast<int64_t>(dists.size()), o.rows, o.cols}, limits::kMaxWorkElements,
                   "--rows x --cols (of every input)");
  std::vector<LoadedTensor> out;
  for (analysis::Distribution d : dists) {
    out.push_back({{std::string(name(d)), o.rows, o.cols, analysis::synthetic_tensor(d, o.rows, o.cols, o.seed)}, 0});
  }
  return out;
}

void check_rht_divides(const std::vector<int>& sizes, int64_t cols, const std::string& what) {
  for (int s : sizes) {
    if (s != 0 && cols % s != 0) {
      throw UsageError(
          fmt::format("RHT {} needs {} to be a multiple of {}, got {} (or use --rht off)", s, what, s, cols));
    }
  }
}

std::optional<analysis::ChainShape> chain_shape(const QuantOptions& o, bool chain_requested,
                                                const std::vector<int>& rht_sizes) {
  if (!chain_requested) return std::nullopt;
  if (o.chain_layers <= 0) throw UsageError(fmt::format("--chain must be positive, got {}", o.chain_layers));
  if (o.chain_width <= 0) throw UsageError(fmt::format("--chain-width must be positive, got {}", o.chain_width));
  if (o.chain_batch <= 0) throw UsageError(fmt::format("--chain-batch must be positive, got {}", o.chain_batch));
  check_rht_divides(rht_sizes, o.chain_width, "--chain-width");
  if (o.chain_layers > limits::kMaxChainLayers) {
    throw UsageError(fmt::format("--chain: {} layers is more than the limit of {}", o.chain_layers,
                                 limits::kMaxChainLayers));
  }
  const std::optional<int64_t> stored = limits::checked_add(o.chain_width, o.chain_batch);
  checked_elements({o.chain_layers, o.chain_width, stored ? *stored : -1}, limits::kMaxWorkElements,
                   "the chain's weights and activations (--chain x --chain-width x (--chain-width + --chain-batch))");
  checked_elements({o.chain_layers, o.chain_batch, o.chain_width, o.chain_width}, limits::kMaxMacs,
                   "the chain's multiply-accumulates (--chain x --chain-batch x --chain-width^2)");
  return analysis::ChainShape{o.chain_layers, o.chain_width, o.chain_batch};
}

// The configuration a secondary report (level table, chain) uses for the
// settings it does not sweep: the first of each list.
QuantConfig first_config(const analysis::MatrixSpec& spec, Format f, int rht) {
  QuantConfig c;
  c.format = f;
  c.scale = spec.scales.front();
  c.block = spec.blocks.front();
  c.rounding = spec.roundings.front();
  c.sr_bits = spec.sr_bits;
  c.seed = spec.seed;
  c.rht.size = rht;
  c.policy = spec.policy;
  return c;
}

std::string level_tables(const analysis::MatrixSpec& spec, const std::vector<analysis::MatrixRow>& rows) {
  std::string out;
  std::vector<std::string> inputs;
  for (const analysis::MatrixRow& r : rows) {
    if (inputs.empty() || inputs.back() != r.input) inputs.push_back(r.input);
  }
  for (const std::string& input : inputs) {
    for (Format f : spec.formats) {
      QuantConfig base = first_config(spec, f, 0);
      // The prediction is for RNE; measure against RNE when it was run.
      for (Rounding r : spec.roundings) {
        if (r == Rounding::kNearestEven) base.rounding = r;
      }
      std::vector<const analysis::MatrixRow*> measured;
      for (const analysis::MatrixRow& r : rows) {
        const QuantConfig& c = r.config;
        if (r.input == input && c.format == f && c.scale == base.scale && c.block == base.block &&
            c.rounding == base.rounding) {
          measured.push_back(&r);
        }
      }
      out += fmt::format("\nper-level grid bias, {}, in value units of the scaled domain: predicted (RNE, flat density) "
                         "and measured on {}, {} {} {}\n",
                         name(f), input, name(base.scale), name(base.block), name(base.rounding));
      out += analysis::level_bias_table(f, measured);
    }
  }
  return out;
}

std::vector<analysis::ChainRun> run_chains(const analysis::MatrixSpec& spec, const analysis::ChainShape& shape) {
  const analysis::ChainProblem problem = analysis::make_chain_problem(shape, spec.seed);
  std::vector<analysis::ChainRun> runs;
  for (Format f : spec.formats) {
    for (int rht : spec.rht_sizes) {
      const QuantConfig c = first_config(spec, f, rht);
      runs.push_back({c, analysis::run_chain(problem, c)});
    }
  }
  return runs;
}

nlohmann::json matrix_json(const QuantOptions& o, const analysis::MatrixSpec& spec,
                           const std::vector<LoadedTensor>& inputs, const std::vector<analysis::MatrixRow>& rows) {
  nlohmann::json json = {{"command", "quant"},
                         {"seed", o.seed},
                         {"sr_bits", o.sr_bits},
                         {"zero", std::string(name(spec.policy.zero))},
                         {"nonfinite", std::string(name(spec.policy.nonfinite))}};
  json["inputs"] = nlohmann::json::array();
  for (const LoadedTensor& in : inputs) {
    const analysis::NamedTensor& t = in.tensor;
    json["inputs"].push_back(
        {{"name", t.name}, {"rows", t.rows}, {"cols", t.cols}, {"nonfinite_zeroed", in.nonfinite}});
  }
  json["rows"] = nlohmann::json::array();
  for (const analysis::MatrixRow& r : rows) json["rows"].push_back(analysis::matrix_row_json(r));
  json["grid_level_bias"] = nlohmann::json::object();
  for (Format f : spec.formats) json["grid_level_bias"][std::string(name(f))] = analysis::grid_level_bias_json(f);
  return json;
}

void run_quant(const QuantOptions& o, bool chain_requested) {
  const analysis::MatrixSpec spec = matrix_spec(o);
  const std::optional<analysis::ChainShape> shape = chain_shape(o, chain_requested, spec.rht_sizes);
  const std::vector<LoadedTensor> inputs = load_inputs(o);
  for (const LoadedTensor& in : inputs) {
    check_rht_divides(spec.rht_sizes, in.tensor.cols,
                      fmt::format("the contraction axis of '{}' (cols)", in.tensor.name));
  }
  // Output files are opened before any work, so a bad path fails at once.
  std::ofstream json_file = open_output(o.json_path, "--json");
  std::ofstream csv_file = open_output(o.csv_path, "--csv");

  fmt::print("nibble quant: seed {}, sr-bits {}, {} configurations per input{}\n", o.seed, o.sr_bits,
             analysis::matrix_row_count(spec),
             spec.policy == QuantPolicy{} ? std::string()
                                          : fmt::format(" (zero={}, nonfinite={})", name(spec.policy.zero),
                                                        name(spec.policy.nonfinite)));
  std::vector<analysis::MatrixRow> rows;
  for (const LoadedTensor& in : inputs) {
    if (in.nonfinite > 0) {
      fmt::print("note: '{}' has {} non-finite values; they are set to 0 for these diagnostics\n", in.tensor.name,
                 in.nonfinite);
    }
    std::vector<analysis::MatrixRow> r = analysis::run_quant_matrix(in.tensor, spec);
    rows.insert(rows.end(), std::make_move_iterator(r.begin()), std::make_move_iterator(r.end()));
  }
  fmt::print("\n{}", analysis::matrix_table(rows));
  if (o.levels) fmt::print("{}", level_tables(spec, rows));

  nlohmann::json json = matrix_json(o, spec, inputs, rows);
  if (shape) {
    const std::vector<analysis::ChainRun> runs = run_chains(spec, *shape);
    const QuantConfig& c0 = runs.front().config;
    fmt::print("\ncompounding chain: {} linear layers, width {}, batch {}, W ~ N(0, 1/width); both operands {} {} {}\n",
               shape->layers, shape->width, shape->batch, name(c0.scale), name(c0.block), name(c0.rounding));
    fmt::print("{}", analysis::chain_table(*shape, runs));
    json["chain"] = analysis::chain_json(*shape, runs);
  }

  if (json_file.is_open()) {
    json_file << json.dump(2) << '\n';
    finish_output(json_file, o.json_path);
  }
  if (csv_file.is_open()) {
    analysis::write_matrix_csv(csv_file, rows);
    finish_output(csv_file, o.csv_path);
  }
}

}  // namespace

void add_quant_command(CLI::App& app) {
  auto o = std::make_shared<QuantOptions>();
  CLI::App* cmd = app.add_subcommand("quant", "Shrinkage-bias diagnostics of the 4-bit formats on synthetic or user tensors");
  cmd->footer(
      "Quantizes a tensor under every combination of the listed formats, scale modes, block shapes, RHT settings "
      "and roundings with the golden model, and reports SQNR, NMSE, the attenuation alpha = <q,x>/||x||^2, the "
      "mean relative magnitude error, code entropy and B_eff = 2^H/15. Metrics of RHT rows are measured in the "
      "rotated domain; dSQNR RHT is SQNR with the RHT minus without it.");

  CLI::Option* input = cmd->add_option("--input", o->input,
                                       "synthetic input (unit variance): gaussian, laplace, student-t (nu=3), "
                                       "uniform, outlier (gaussian with one column x20), or all")
                           ->capture_default_str();
  CLI::Option* tensor = cmd->add_option("--tensor", o->tensor_path,
                                        "quantize a user tensor (.npy or .safetensors) instead, viewed as "
                                        "[rows, last axis]; its non-finite values are set to 0 and counted");
  cmd->add_option("--tensor-name", o->tensor_name, "the tensor to read from a .safetensors file")->needs(tensor);
  CLI::Option* rows =
      cmd->add_option("--rows", o->rows, "rows of the synthetic input")->capture_default_str()->check(integer_in());
  CLI::Option* cols = cmd->add_option("--cols", o->cols, "columns (the contraction axis) of the synthetic input")
                          ->capture_default_str()
                          ->check(integer_in());
  tensor->excludes(input)->excludes(rows)->excludes(cols);

  cmd->add_option("--formats", o->formats, "element formats: " + format_names(", "))->delimiter(',')->capture_default_str();
  cmd->add_option("--scale", o->scales, "scale modes: " + scale_mode_names(", "))
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--block", o->blocks,
                  "block shapes: 1x16, 1x32 (along the contraction axis), 16x16; a last block that does not fill "
                  "its shape is quantized as if zero-padded")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--rht", o->rht,
                  "random Hadamard transform along the contraction axis: off, 16, 32, 64, 128 (the axis must be a "
                  "multiple of the size)")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--rounding", o->roundings, "element rounding: rne, sr")->delimiter(',')->capture_default_str();
  cmd->add_option("--sr-bits", o->sr_bits, "random bits per stochastic rounding, 1..8")->capture_default_str();
  cmd->add_option("--seed", o->seed, "seeds the synthetic inputs, the SR bits and the RHT signs")
      ->capture_default_str()
      ->check(unsigned_integer());
  cmd->add_option("--zero", o->zero,
                  "code of a value that rounds to zero: positive (code 0) or signed (keep the sign, as IEEE, OCP MX, "
                  "CUDA, Transformer Engine); the metrics read values, so only the code counts change")
      ->capture_default_str();
  cmd->add_option("--nonfinite", o->nonfinite,
                  "NaN/Inf policy of the quantizer: finite or propagate (Transformer Engine's); a user tensor's NaN "
                  "and Inf are set to 0 first, so it acts where the chain's values overflow")
      ->capture_default_str();

  CLI::Option* chain = cmd->add_option("--chain", o->chain_layers,
                                       "also run the compounding chain through this many random linear layers, for "
                                       "each format and RHT setting, with the first scale, block and rounding");
  cmd->add_option("--chain-width", o->chain_width, "the chain's width d (W is d x d)")
      ->needs(chain)
      ->capture_default_str()
      ->check(integer_in());
  cmd->add_option("--chain-batch", o->chain_batch, "the chain's batch B (X is B x d)")
      ->needs(chain)
      ->capture_default_str()
      ->check(integer_in());

  cmd->add_option("--json", o->json_path, "write every result as JSON (non-finite numbers become null)");
  cmd->add_option("--csv", o->csv_path, "write the matrix rows as CSV");
  cmd->add_flag("--levels", o->levels,
                "print each format's per-level grid bias: predicted for RNE on a flat density, and measured with the "
                "first scale and block (RNE if listed)");

  cmd->callback([o, chain] { run_quant(*o, chain->count() > 0); });
}

}  // namespace nibble::cli
