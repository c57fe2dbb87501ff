// Files through Nibble's own readers: tensors from .npy and .safetensors
// (nibble/io/tensor_file.h), quantized-tensor files (nibble/io/quantized_file.h)
// and the recorded area and energy results, read by the report's reader
// (nibble/report/report.h, read_area).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "bindings.h"
#include "convert.h"
#include "nibble/io/quantized_file.h"
#include "nibble/io/tensor_file.h"
#include "nibble/report/report.h"

namespace nibble::python {
namespace {

py::array_t<float> read_tensor(const std::string& path, const std::string& tensor_name) {
  io::Tensor t;
  {
    py::gil_scoped_release unlocked;
    t = io::read_tensor(path, tensor_name);
  }
  return to_numpy(std::move(t.data), t.shape);
}

py::dict read_quantized(const std::string& path) {
  std::vector<io::QuantizedEntry> entries;
  {
    py::gil_scoped_release unlocked;
    entries = io::read_quantized(path);
  }
  py::dict out;
  for (io::QuantizedEntry& e : entries) out[py::str(e.name)] = std::move(e.tensor);
  return out;
}

void write_quantized(const std::string& path, const std::map<std::string, QuantizedTensor>& tensors) {
  std::vector<io::QuantizedEntry> entries;
  for (const auto& [entry_name, q] : tensors) entries.push_back({entry_name, false, q});
  py::gil_scoped_release unlocked;
  io::write_quantized(path, entries);
}

py::dict area_record(const report::AreaData::Record& r) {
  py::dict d;
  d["table"] = r.table;
  d["config"] = r.config;
  d["label"] = r.label;
  d["unit"] = r.unit;
  d["area"] = r.area;
  d["percent_vs_e2m1"] = r.has_percent ? py::object(py::float_(r.percent_vs_e2m1)) : py::object(py::none());
  return d;
}

py::dict energy_record(const report::AreaData::Energy& e) {
  py::dict d;
  d["table"] = e.table;
  d["config"] = e.config;
  d["format"] = e.format;
  d["operands"] = e.operands;
  d["unit"] = e.unit;
  d["energy_per_mac"] = e.energy_per_mac;
  d["command"] = e.command;
  return d;
}

}  // namespace

void bind_files(py::module_& m) {
  m.def("_read_tensor", &read_tensor, py::arg("path"), py::arg("name"));
  m.def("list_safetensors", &io::list_safetensors, py::arg("path"), "The tensor names of a .safetensors file.");
  m.def("_read_quantized", &read_quantized, py::arg("path"));
  m.def("write_quantized", &write_quantized, py::arg("path"), py::arg("tensors"),
        "Writes {name: QuantizedTensor} as a quantized-tensor file (schema nibble-quantized/1), which "
        "`nibble golden-quant --check`, `golden-gemm` and `golden-dequant` read.");

  using report::AreaData;
  py::class_<AreaData>(m, "AreaEnergy", "Recorded area and energy results, as `nibble report` reads them.")
      .def_readonly("present", &AreaData::present)
      .def_readonly("problem", &AreaData::problem, "Why the results are absent or partly unreadable; '' if not.")
      .def_readonly("schema", &AreaData::schema)
      .def_readonly("mixfp4_area_percent", &AreaData::mixfp4_area_percent)
      .def_readonly("mixfp4_power_percent", &AreaData::mixfp4_power_percent)
      .def_property_readonly("commands", [](const AreaData& a) { return from_json(a.commands); },
                             "The commands that made the results, by name.")
      .def_property_readonly(
          "_area",
          [](const AreaData& a) {
            py::list l;
            for (const AreaData::Record& r : a.records) l.append(area_record(r));
            return l;
          })
      .def_property_readonly(
          "_energy",
          [](const AreaData& a) {
            py::list l;
            for (const AreaData::Energy& e : a.energy) l.append(energy_record(e));
            return l;
          })
      .def("energy_percent", &AreaData::energy_percent, py::arg("table"), py::arg("config"), py::arg("format"),
           py::arg("operands") = "gaussian",
           "Energy per MAC of (table, config, format) relative to E2M1-only running E2M1, in percent; NaN where "
           "not recorded.");
  m.def("_read_area_energy", &report::read_area, py::arg("results_dir"));
}

}  // namespace nibble::python
