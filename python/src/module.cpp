// `_nibble`: the compiled half of the Python package `nibble` (python/nibble/).
// Errors: golden's std::invalid_argument arrives as ValueError with golden's
// message (pybind11's translation), a defective tensor or quantized-tensor file
// as nibble.TensorFileError (a ValueError), running out of memory as MemoryError.
#include <pybind11/pybind11.h>

#include "bindings.h"
#include "nibble/io/tensor_file.h"

PYBIND11_MODULE(_nibble, m) {
  m.doc() = "Nibble's golden model, diagnostics and recorded results (the compiled part of `nibble`).";
  pybind11::register_exception<nibble::io::TensorFileError>(m, "TensorFileError", PyExc_ValueError);
  m.attr("__version__") = NIBBLE_VERSION;
  m.attr("source_results_dir") = NIBBLE_SOURCE_RESULTS_DIR;
  m.attr("build_cli") = NIBBLE_BUILD_CLI;  // the build tree's `nibble`, which nibble.synthesize runs
  nibble::python::bind_golden(m);
  nibble::python::bind_analysis(m);
  nibble::python::bind_files(m);
  nibble::python::bind_quantized(m);
  nibble::python::bind_recipes(m);
}
