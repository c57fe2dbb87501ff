# Installs the Python package alone (`cmake --install --component python`) into a
# fresh prefix and imports it from there, outside the build and source trees:
#   cmake -DBUILD_DIR= -DWORK_DIR= -DPYTHON= -DSITE_DIR= -P install_package.cmake
set(prefix ${WORK_DIR}/prefix)
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix} --component python
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install failed (${rc}):\n${out}\n${err}")
endif()
set(check [=[
import os, sys
import numpy as np
import nibble
prefix = sys.argv[1]
assert os.path.realpath(nibble.__file__).startswith(os.path.realpath(prefix)), nibble.__file__
q = nibble.quantize(np.linspace(-3, 3, 64, dtype=np.float32).reshape(2, 32), format="e1m2", scale="nvfp4")
assert q.codes.shape == (2, 32) and q.dequantize().dtype == np.float32
data = nibble.area_energy()
assert data.present and len(data.area) > 0, data.problem
assert os.path.realpath(nibble._default_results_dir()).startswith(os.path.realpath(prefix))
print("installed nibble", nibble.__version__, "at", os.path.dirname(nibble.__file__), ":", len(data.area), "area records")
]=])
execute_process(COMMAND ${CMAKE_COMMAND} -E env PYTHONPATH=${prefix}/${SITE_DIR} ${PYTHON} -c "${check}" ${prefix}
                WORKING_DIRECTORY ${WORK_DIR} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "import from ${prefix}/${SITE_DIR} failed (${rc}):\n${out}\n${err}")
endif()
message(STATUS "${out}")
