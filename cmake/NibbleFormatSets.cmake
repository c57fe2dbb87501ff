include_guard(GLOBAL)
# Golden's format sets (golden/include/nibble/format_sets.h) as CMake variables: cmake/format_sets.cpp
# is compiled and run at configure time and its output written to
# ${CMAKE_BINARY_DIR}/format_sets.cmake, which is included here and read by rtl/lint/run_lint.cmake
# (FORMAT_SETS). Reconfigures when the table changes. Sets NIBBLE_FORMAT_COUNT,
# NIBBLE_SCALE_FORMAT_COUNT, NIBBLE_FORMAT_MASK_ALL, NIBBLE_FORMAT_MASK_BASELINE,
# NIBBLE_SCALE_FORMAT_MASK_ALL (and the _SV literals of the three masks), and the lists NIBBLE_FORMAT_SET_{NAMES,MASKS,SV},
# NIBBLE_FORMAT_MASKS_EVERY_SV, NIBBLE_SCALE_FORMAT_SET_{MASKS,SV}, NIBBLE_SCALE_FORMAT_ALONE_SV.
set(NIBBLE_FORMAT_SETS_FILE ${CMAKE_BINARY_DIR}/format_sets.cmake)
try_run(nibble_format_sets_rc nibble_format_sets_compiled
  ${CMAKE_BINARY_DIR}/format-sets ${CMAKE_CURRENT_LIST_DIR}/format_sets.cpp
  CMAKE_FLAGS "-DINCLUDE_DIRECTORIES=${PROJECT_SOURCE_DIR}/golden/include"
  CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON
  COMPILE_OUTPUT_VARIABLE nibble_format_sets_compile_out
  RUN_OUTPUT_VARIABLE nibble_format_sets_out)
if(NOT nibble_format_sets_compiled OR NOT nibble_format_sets_rc EQUAL 0)
  message(FATAL_ERROR "cmake/format_sets.cpp failed:\n${nibble_format_sets_compile_out}${nibble_format_sets_out}")
endif()
file(WRITE ${NIBBLE_FORMAT_SETS_FILE} "${nibble_format_sets_out}")
include(${NIBBLE_FORMAT_SETS_FILE})
set_property(DIRECTORY ${PROJECT_SOURCE_DIR} APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
  ${CMAKE_CURRENT_LIST_DIR}/format_sets.cpp ${PROJECT_SOURCE_DIR}/golden/include/nibble/format_sets.h
  ${PROJECT_SOURCE_DIR}/golden/include/nibble/formats.h ${PROJECT_SOURCE_DIR}/golden/include/nibble/codes.h
  ${PROJECT_SOURCE_DIR}/golden/include/nibble/scale.h)
