# `cmake --install <build> --prefix P` installs the golden model for other projects:
#   include/nibble/*.h                       golden's C++ headers and the C API header
#   lib/libnibble_golden.a                   golden (C++17, static)      -> Nibble::golden
#   lib/libnibble_golden_c.so                the C API (shared)          -> Nibble::golden_c
#   lib/cmake/Nibble/                        find_package(Nibble) config, targets, version
#   lib/pkgconfig/nibble-golden.pc           pkg-config for the C API
#   share/nibble/sv/nibble_golden_dpi.sv     the SystemVerilog DPI-C package
# Random123 is not needed by consumers: no installed header includes it.
include(CMakePackageConfigHelpers)

set(NIBBLE_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/Nibble)
set(NIBBLE_INSTALL_SVDIR ${CMAKE_INSTALL_DATADIR}/nibble/sv)

install(TARGETS nibble_golden nibble_golden_c EXPORT NibbleTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/golden/include/nibble ${PROJECT_SOURCE_DIR}/golden/capi/include/nibble
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.h")
install(FILES ${PROJECT_SOURCE_DIR}/golden/capi/sv/nibble_golden_dpi.sv DESTINATION ${NIBBLE_INSTALL_SVDIR})
install(EXPORT NibbleTargets NAMESPACE Nibble:: DESTINATION ${NIBBLE_INSTALL_CMAKEDIR})

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/NibbleConfig.cmake.in
  ${PROJECT_BINARY_DIR}/NibbleConfig.cmake
  INSTALL_DESTINATION ${NIBBLE_INSTALL_CMAKEDIR}
  PATH_VARS NIBBLE_INSTALL_SVDIR)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/NibbleConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/NibbleConfig.cmake ${PROJECT_BINARY_DIR}/NibbleConfigVersion.cmake
  DESTINATION ${NIBBLE_INSTALL_CMAKEDIR})

# The .pc file finds its prefix from its own location, so it is right for any --prefix.
file(RELATIVE_PATH NIBBLE_PC_PREFIX_FROM_PCDIR ${CMAKE_INSTALL_FULL_LIBDIR}/pkgconfig ${CMAKE_INSTALL_PREFIX})
string(REGEX REPLACE "/$" "" NIBBLE_PC_PREFIX_FROM_PCDIR "${NIBBLE_PC_PREFIX_FROM_PCDIR}")
configure_file(${PROJECT_SOURCE_DIR}/cmake/nibble-golden.pc.in ${PROJECT_BINARY_DIR}/nibble-golden.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/nibble-golden.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
