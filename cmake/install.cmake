# SPDX-License-Identifier: Apache-2.0
# Install rules, included by the top-level CMakeLists.txt when
# OUTBOUND_INSTALL is on: headers (the generated version.h included), the
# libraries and the command, a CMake package config with its version file,
# a pkg-config file per library, the license, and a .deb through CPack.

install(DIRECTORY include/outbound DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${PROJECT_BINARY_DIR}/include/outbound/version.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/outbound)
if(TARGET outbound)
  install(TARGETS outbound RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()

# Two export sets, so that a project using only the client never loads
# the test kit's targets, nor looks for what the kit links.
install(TARGETS outbound_core outbound_http outbound_config EXPORT outbound-targets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(EXPORT outbound-targets NAMESPACE outbound::
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/outbound)
if(TARGET outbound_testing)
  install(TARGETS outbound_testing EXPORT outbound-testing-targets
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
          RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  install(EXPORT outbound-testing-targets NAMESPACE outbound::
          DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/outbound)
endif()

if(TARGET outbound_prometheus)
  install(TARGETS outbound_prometheus EXPORT outbound-prometheus-targets
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
          RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  install(EXPORT outbound-prometheus-targets NAMESPACE outbound::
          DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/outbound)
endif()

if(TARGET outbound_otlp)
  install(TARGETS outbound_otlp EXPORT outbound-otlp-targets
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
          RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  install(EXPORT outbound-otlp-targets NAMESPACE outbound::
          DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/outbound)
endif()

if(TARGET outbound_rpc)
  install(TARGETS outbound_rpc EXPORT outbound-rpc-targets
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
          RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  install(EXPORT outbound-rpc-targets NAMESPACE outbound::
          DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/outbound)
endif()

configure_package_config_file(cmake/outbound-config.cmake.in
  ${PROJECT_BINARY_DIR}/outbound-config.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/outbound)
# 0.x: a minor release may break the API, so 0.2 accepts 0.2.* only.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/outbound-config-version.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/outbound-config.cmake
              ${PROJECT_BINARY_DIR}/outbound-config-version.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/outbound)

# outbound_pkg_config(PART DESCRIPTION REQUIRES REQUIRES_PRIVATE LIBS_PRIVATE)
# A static library's private dependencies are every consumer's: they go in
# Requires and Libs, so `pkg-config --libs` links them. `--static` would ask
# for the system libraries' own static dependencies too, which a
# distribution's -dev packages do not all install.
#
# The files are relocatable: the prefix is found from where the file is
# (pkg-config's ${pcfiledir}), so a tree installed with `cmake --install
# --prefix` elsewhere, or moved, still names its own headers and libraries.
# Only a LIBDIR or INCLUDEDIR given as an absolute path is written as it is.
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}" OR IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  set(pc_prefix "${CMAKE_INSTALL_PREFIX}")
  set(pc_libdir "${CMAKE_INSTALL_FULL_LIBDIR}")
  set(pc_includedir "${CMAKE_INSTALL_FULL_INCLUDEDIR}")
else()
  file(RELATIVE_PATH pc_up "/prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/prefix")
  string(REGEX REPLACE "/$" "" pc_up "${pc_up}")
  set(pc_prefix "\${pcfiledir}/${pc_up}")
  set(pc_libdir "\${prefix}/${CMAKE_INSTALL_LIBDIR}")
  set(pc_includedir "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
endif()
function(outbound_pkg_config part description requires requires_private libs_private)
  set(libs "")
  if(NOT BUILD_SHARED_LIBS)
    string(STRIP "${requires} ${requires_private}" requires)
    set(requires_private "")
    if(libs_private)
      set(libs " ${libs_private}")
    endif()
    set(libs_private "")
  endif()
  configure_file(cmake/outbound.pc.in ${PROJECT_BINARY_DIR}/pkgconfig/outbound-${part}.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/pkgconfig/outbound-${part}.pc
          DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endfunction()
# tl-expected (header-only, /usr/include on Debian) ships no .pc file.
outbound_pkg_config(core "outbound: Result/Error, clocks, the retry and circuit models"
                    "" "" "-pthread")
outbound_pkg_config(http "outbound: the HTTP client of one dependency"
                    "outbound-core" "openssl libnghttp2 zlib" "")
outbound_pkg_config(config "outbound: client settings sourced from variables"
                    "outbound-http" "" "")
if(TARGET outbound_testing)
  outbound_pkg_config(testing "outbound: the test kit (ManualClock, TestCA, FakeServer)"
                      "outbound-http" "openssl libnghttp2 zlib" "")
endif()

if(TARGET outbound_prometheus)
  outbound_pkg_config(prometheus "outbound: metrics served to Prometheus (prometheus-cpp)"
                      "outbound-core" "" "-lprometheus-cpp-pull -lprometheus-cpp-core")
endif()

if(TARGET outbound_otlp)
  outbound_pkg_config(otlp "outbound: spans, logs and metrics sent as OTLP/HTTP JSON"
                      "outbound-http" "" "")
endif()

install(FILES LICENSE NOTICE CHANGELOG.md README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})

# `cpack -G DEB` in the build directory makes a .deb of the whole install.
set(CPACK_PACKAGE_NAME outbound)
set(CPACK_PACKAGE_VENDOR "The outbound Authors")
set(CPACK_PACKAGE_CONTACT "The outbound Authors <outbound@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_GENERATOR DEB)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# What the headers and the static libraries need at build time.
set(CPACK_DEBIAN_PACKAGE_DEPENDS
    "libexpected-dev, libssl-dev, libnghttp2-dev, zlib1g-dev")
# The optional JSON helpers.
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "nlohmann-json3-dev")
include(CPack)

if(TARGET outbound_rpc)
  outbound_pkg_config(rpc "outbound: the gRPC client of one dependency"
                      "outbound-core outbound-http outbound-config" "zlib" "")
endif()
