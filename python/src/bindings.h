// The parts of the `_nibble` extension module, one function per source file.
#pragma once

#include <pybind11/pybind11.h>

namespace nibble::python {

void bind_golden(pybind11::module_& m);    // golden.cpp
void bind_analysis(pybind11::module_& m);  // analysis.cpp
void bind_files(pybind11::module_& m);     // files.cpp
void bind_quantized(pybind11::module_& m);  // quantized.cpp
void bind_recipes(pybind11::module_& m);    // recipes.cpp

}  // namespace nibble::python
