# Shared warning set for every Nibble target.
function(nibble_target_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wconversion
                                           -Wno-sign-conversion)
  # The golden model's arithmetic is specified operation by operation: the compiler
  # must not fuse a multiply and an add into one rounding.
  target_compile_options(${target} PRIVATE -ffp-contract=off)
endfunction()

# nibble_sanitizer_environment(test...): in the sanitizer build (-DNIBBLE_SANITIZE=ON), the
# runtime options the tests and every program they start run under, so that a plain
# `ctest --test-dir build-asan` applies them: leaks checked, the reviewed suppressions of
# cmake/sanitizers/ (each with its reason; docs/results/sanitizers.md), UBSan stack traces.
# Through ENVIRONMENT_MODIFICATION, which a test's own ENVIRONMENT does not replace.
function(nibble_sanitizer_environment)
  if(NOT NIBBLE_SANITIZE)
    return()
  endif()
  set_property(TEST ${ARGN} APPEND PROPERTY ENVIRONMENT_MODIFICATION
    "ASAN_OPTIONS=set:detect_leaks=1"
    "LSAN_OPTIONS=set:suppressions=${PROJECT_SOURCE_DIR}/cmake/sanitizers/lsan.supp:print_suppressions=0"
    "UBSAN_OPTIONS=set:print_stacktrace=1:halt_on_error=1")
endfunction()

# nibble_add_test(NAME name SOURCES ... [LIBS ...] [LABELS ...] [TIMEOUT s] [SKIPPABLE])
# SKIPPABLE marks a suite that skips as a whole where its hardware or headers
# are absent (GPU tests): CTest then reports it as skipped, not passed.
# One GoogleTest executable registered with CTest as a single test. A run in
# which GoogleTest found zero tests fails: a suite that checks nothing is a defect.
function(nibble_add_test)
  cmake_parse_arguments(T "SKIPPABLE" "NAME;TIMEOUT" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${T_NAME} ${T_SOURCES})
  nibble_target_warnings(${T_NAME})
  target_link_libraries(${T_NAME} PRIVATE ${T_LIBS} GTest::gtest GTest::gtest_main)
  set_target_properties(${T_NAME} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
  add_test(NAME ${T_NAME} COMMAND ${T_NAME})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 600)
  endif()
  set_tests_properties(${T_NAME} PROPERTIES TIMEOUT ${T_TIMEOUT} LABELS "${T_LABELS}"
                       FAIL_REGULAR_EXPRESSION "Running 0 tests")
  if(T_SKIPPABLE)
    set_tests_properties(${T_NAME} PROPERTIES SKIP_REGULAR_EXPRESSION "\\[  SKIPPED \\]")
  endif()
  nibble_sanitizer_environment(${T_NAME})
endfunction()
