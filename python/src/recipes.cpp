// The training recipes of `nibble train` (nibble/train/recipe.h): the presets,
// their ablation flags, and the QuantConfig each operand of a linear layer's
// three GEMMs gets, as the trainer asks for it. Torch-free: a recipe is
// golden settings per operand, so NumPy callers can quantize tensors exactly as
// a recipe would.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>

#include "bindings.h"
#include "convert.h"
#include "nibble/train/recipe.h"

namespace nibble::python {
namespace {

namespace tr = nibble::train;

tr::Gemm gemm_named(const std::string& s) {
  for (tr::Gemm g : tr::kAllGemms) {
    if (tr::name(g) == s) return g;
  }
  throw py::value_error("unknown GEMM '" + s + "'; valid: fprop, dgrad, wgrad");
}

tr::Operand operand_named(const std::string& s) {
  if (s == "a") return tr::Operand::kA;
  if (s == "b") return tr::Operand::kB;
  throw py::value_error("unknown operand '" + s + "'; valid: a, b (C = A * B^T)");
}

const char* role_name(tr::Role r) {
  switch (r) {
    case tr::Role::kX: return "x";
    case tr::Role::kW: return "w";
    case tr::Role::kDY: return "dy";
  }
  return "?";
}

tr::Recipe make_recipe(const std::string& preset, const std::optional<std::string>& format,
                       const std::optional<std::string>& scale, const std::optional<std::string>& act_block,
                       const std::optional<std::string>& weight_block, const std::optional<std::string>& rht,
                       const std::optional<std::string>& sr, const std::optional<int>& sr_bits,
                       const std::optional<int>& bf16_first, const std::optional<int>& bf16_last) {
  tr::RecipeFlags f;
  f.format = format;
  f.scale = scale;
  f.act_block = act_block;
  f.weight_block = weight_block;
  f.rht = rht;
  f.sr = sr;
  f.sr_bits = sr_bits;
  f.bf16_first = bf16_first;
  f.bf16_last = bf16_last;
  return tr::apply_flags(tr::preset(preset), f);  // RecipeError is an invalid_argument: ValueError
}

std::optional<QuantConfig> operand_config(const tr::Recipe& r, const std::string& gemm, const std::string& operand,
                                          const py::object& layer, const py::object& n_layers,
                                          const py::object& seed) {
  const auto n = static_cast<int>(checked_int(n_layers, "n_layers", 1, INT32_MAX));
  const auto l = static_cast<int>(checked_int(layer, "layer", 0, n - 1));
  return tr::operand_config(r, gemm_named(gemm), operand_named(operand), l, n, checked_uint(seed, "seed", UINT64_MAX));
}

}  // namespace

void bind_recipes(py::module_& m) {
  py::tuple presets(tr::preset_names().size());
  for (size_t i = 0; i < presets.size(); ++i) presets[i] = tr::preset_names()[i];
  m.attr("recipes") = presets;
  py::tuple gemms(tr::kAllGemms.size());
  for (size_t i = 0; i < gemms.size(); ++i) gemms[i] = std::string(tr::name(tr::kAllGemms[i]));
  m.attr("recipe_gemms") = gemms;

  py::class_<tr::Recipe>(m, "Recipe", "A training recipe of `nibble train`: golden settings per GEMM operand.")
      .def(py::init(&make_recipe), py::arg("preset"), py::kw_only(), py::arg("format") = py::none(),
           py::arg("scale") = py::none(), py::arg("act_block") = py::none(), py::arg("weight_block") = py::none(),
           py::arg("rht") = py::none(), py::arg("sr") = py::none(), py::arg("sr_bits") = py::none(),
           py::arg("bf16_first") = py::none(), py::arg("bf16_last") = py::none(),
           "A preset (nibble.recipes) with the ablation flags of `nibble train` (--format, --scale, --act-block, "
           "--weight-block, --rht none|all|fprop,dgrad,wgrad, --sr none|grad|all, --sr-bits, --bf16-first, "
           "--bf16-last).")
      .def_readonly("name", &tr::Recipe::name)
      .def_readonly("quantized", &tr::Recipe::quantized)
      .def_property_readonly("description", [](const tr::Recipe& r) { return tr::describe(r); })
      .def_property_readonly("rht",
                             [](const tr::Recipe& r) {
                               py::list on;
                               for (tr::Gemm g : tr::kAllGemms) {
                                 if (r.rht[static_cast<size_t>(g)]) on.append(std::string(tr::name(g)));
                               }
                               return py::tuple(on);
                             },
                             "The GEMMs whose operands are rotated (RHT16).")
      .def_readonly("sr_bits", &tr::Recipe::sr_bits)
      .def_readonly("bf16_first", &tr::Recipe::bf16_first)
      .def_readonly("bf16_last", &tr::Recipe::bf16_last)
      .def("layer_quantized", &tr::layer_quantized, py::arg("layer"), py::arg("n_layers"),
           "Whether transformer block `layer` of n_layers runs its linears quantized.")
      .def("operand_config", &operand_config, py::arg("gemm"), py::arg("operand"), py::kw_only(),
           py::arg("layer") = 0, py::arg("n_layers") = 1, py::arg("seed") = 0,
           "The QuantConfig of operand 'a' or 'b' of GEMM fprop, dgrad or wgrad (C = A * B^T) in transformer block "
           "`layer`, or None where that GEMM runs in BF16; seed is the GEMM's seed (nibble.gemm_seed).")
      .def("__repr__", [](const tr::Recipe& r) { return "<nibble.Recipe " + r.name + ": " + tr::describe(r) + ">"; });

  m.def(
      "operand_role",
      [](const std::string& gemm, const std::string& operand) {
        const tr::OperandRole r = tr::operand_role(gemm_named(gemm), operand_named(operand));
        return py::make_tuple(role_name(r.role), r.transposed);
      },
      py::arg("gemm"), py::arg("operand"),
      "(tensor, transposed): which of the layer's x, w, dy an operand is made of, and whether it is quantized "
      "column-wise (its transpose).");
  m.def(
      "gemm_seed",
      [](const py::object& run_seed, const py::object& step, const py::object& linear_index, const std::string& gemm) {
        return tr::gemm_seed(checked_uint(run_seed, "run_seed", UINT64_MAX),
                             checked_int(step, "step", 0, (int64_t{1} << 44) - 1),
                             static_cast<int>(checked_int(linear_index, "linear_index", 0, (1 << 18) - 1)),
                             gemm_named(gemm));
      },
      py::arg("run_seed"), py::arg("step"), py::arg("linear_index"), py::arg("gemm"),
      "The seed of one GEMM's quantizations in `nibble train` (RHT signs and SR bits) from the run's "
      "quantization seed, the step (< 2^44), the linear layer's index (< 2^18) and the GEMM.");
}

}  // namespace nibble::python
