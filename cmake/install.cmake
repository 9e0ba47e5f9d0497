# Installation and packaging of bolt-pack: the library (static or shared, as
# BUILD_SHARED_LIBS says), its public headers, the bolt-pack CLI, a CMake
# package (find_package(boltpack) -> boltpack::boltpack) and a pkg-config
# file (boltpack.pc). Included at the end of the top-level CMakeLists.txt.
#
# Consumers:
#   CMake:       find_package(boltpack 0.1 REQUIRED)
#                target_link_libraries(app PRIVATE boltpack::boltpack)
#   pkg-config:  cc app.c $(pkg-config --cflags --libs boltpack)
# Both work against a shared or a static libboltpack: for a static one the
# package config finds protobuf, zstd, Threads (and always Abseil, which the
# C++ headers use), and boltpack.pc lists them in Requires/Libs.

include(CMakePackageConfigHelpers)
include(GNUInstallDirs)

# ---- include/boltpack/version.h must agree with project(VERSION) ----------
file(STRINGS ${PROJECT_SOURCE_DIR}/include/boltpack/version.h _bp_version_lines
     REGEX "^#define BOLTPACK_VERSION_(MAJOR|MINOR|PATCH) +[0-9]+")
set(_bp_header_version "")
foreach(_part MAJOR MINOR PATCH)
  set(_bp_${_part} "")
  foreach(_line IN LISTS _bp_version_lines)
    if(_line MATCHES "^#define BOLTPACK_VERSION_${_part} +([0-9]+)")
      set(_bp_${_part} ${CMAKE_MATCH_1})
    endif()
  endforeach()
endforeach()
set(_bp_header_version "${_bp_MAJOR}.${_bp_MINOR}.${_bp_PATCH}")
file(STRINGS ${PROJECT_SOURCE_DIR}/include/boltpack/version.h _bp_version_string
     REGEX "^#define BOLTPACK_VERSION_STRING \"${PROJECT_VERSION}\"")
if(NOT _bp_header_version STREQUAL PROJECT_VERSION OR NOT _bp_version_string)
  message(FATAL_ERROR "include/boltpack/version.h says ${_bp_header_version} but "
                      "project(VERSION) is ${PROJECT_VERSION}: update the header "
                      "(BOLTPACK_VERSION_MAJOR/MINOR/PATCH and BOLTPACK_VERSION_STRING)")
endif()

get_target_property(_bp_lib_type boltpack TYPE)
if(_bp_lib_type STREQUAL "STATIC_LIBRARY")
  set(BOLTPACK_PACKAGE_STATIC TRUE)
else()
  set(BOLTPACK_PACKAGE_STATIC FALSE)
endif()

set(BOLTPACK_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/boltpack
    CACHE STRING "Where boltpackConfig.cmake is installed (relative to the prefix)")
set(BOLTPACK_INSTALL_PKGCONFIGDIR ${CMAKE_INSTALL_LIBDIR}/pkgconfig
    CACHE STRING "Where boltpack.pc is installed (relative to the prefix)")

# The installed CLI finds an installed shared libboltpack next to it, whatever
# the prefix (a static CLI needs no run path).
if(NOT APPLE AND NOT _bp_cli_static_libs)
  set_property(TARGET bolt-pack APPEND PROPERTY INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")
endif()

# ---- targets -------------------------------------------------------------
# boltpack_proto is compiled into libboltpack through $<TARGET_OBJECTS:...>,
# not linked, so it is not part of the exported interface.
install(TARGETS boltpack bolt-pack
  EXPORT boltpackTargets
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT Runtime
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT Runtime
          NAMELINK_COMPONENT Development
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT Development)
# (The include directory comes from boltpack's $<INSTALL_INTERFACE:...>.)

# Only the public headers: include/boltpack/*.h and *.hpp.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/boltpack/
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/boltpack
  COMPONENT Development
  FILES_MATCHING PATTERN "*.h" PATTERN "*.hpp")

# ---- CMake package -------------------------------------------------------
install(EXPORT boltpackTargets
  NAMESPACE boltpack::
  DESTINATION ${BOLTPACK_INSTALL_CMAKEDIR}
  COMPONENT Development)

configure_package_config_file(
  ${CMAKE_CURRENT_LIST_DIR}/boltpackConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/boltpackConfig.cmake
  INSTALL_DESTINATION ${BOLTPACK_INSTALL_CMAKEDIR})
# Before 1.0 a minor release may break the API.
if(PROJECT_VERSION_MAJOR EQUAL 0)
  set(_bp_compat SameMinorVersion)
else()
  set(_bp_compat SameMajorVersion)
endif()
write_basic_package_version_file(
  ${CMAKE_CURRENT_BINARY_DIR}/boltpackConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY ${_bp_compat})
install(FILES
  ${CMAKE_CURRENT_BINARY_DIR}/boltpackConfig.cmake
  ${CMAKE_CURRENT_BINARY_DIR}/boltpackConfigVersion.cmake
  DESTINATION ${BOLTPACK_INSTALL_CMAKEDIR}
  COMPONENT Development)

# ---- pkg-config ----------------------------------------------------------
# Paths relative to ${pcfiledir}, so the file stays right under
# `cmake --install --prefix <anywhere>` (the prefix is only known then).
function(_bp_pc_path out dir)
  if(IS_ABSOLUTE "${dir}")
    set(${out} "${dir}" PARENT_SCOPE)
  else()
    set(${out} "\${prefix}/${dir}" PARENT_SCOPE)
  endif()
endfunction()
if(IS_ABSOLUTE "${BOLTPACK_INSTALL_PKGCONFIGDIR}")
  set(BOLTPACK_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
else()
  # One ".." per component of the pkgconfig dir.
  set(BOLTPACK_PC_PREFIX "\${pcfiledir}")
  string(REPLACE "/" ";" _bp_parts "${BOLTPACK_INSTALL_PKGCONFIGDIR}")
  foreach(_part IN LISTS _bp_parts)
    if(NOT _part STREQUAL "" AND NOT _part STREQUAL ".")
      string(APPEND BOLTPACK_PC_PREFIX "/..")
    endif()
  endforeach()
endif()
_bp_pc_path(BOLTPACK_PC_LIBDIR "${CMAKE_INSTALL_LIBDIR}")
_bp_pc_path(BOLTPACK_PC_INCLUDEDIR "${CMAKE_INSTALL_INCLUDEDIR}")

# Abseil is public (the C++ headers use it). A shared libboltpack records
# protobuf, zstd and the C++ runtime itself; a static one cannot, so then
# they move to Requires/Libs and a plain `pkg-config --libs boltpack` links.
# The private Abseil modules are the ones the library's sources use beyond
# the public ones (absl pkg-config modules do not pull them in transitively
# the way its CMake targets happen to).
set(BOLTPACK_PC_REQUIRES "absl_status absl_statusor absl_strings absl_span")
set(_bp_pc_private "absl_flat_hash_map absl_flat_hash_set absl_str_format protobuf libzstd libxxhash")
if(BOLTPACK_PACKAGE_STATIC)
  string(APPEND BOLTPACK_PC_REQUIRES " ${_bp_pc_private}")
  set(BOLTPACK_PC_REQUIRES_PRIVATE "")
  set(BOLTPACK_PC_LIBS "-pthread -lstdc++ -lm")
  set(BOLTPACK_PC_LIBS_PRIVATE "")
else()
  set(BOLTPACK_PC_REQUIRES_PRIVATE "${_bp_pc_private}")
  set(BOLTPACK_PC_LIBS "")
  set(BOLTPACK_PC_LIBS_PRIVATE "-pthread -lstdc++ -lm")
endif()
configure_file(${CMAKE_CURRENT_LIST_DIR}/boltpack.pc.in
               ${CMAKE_CURRENT_BINARY_DIR}/boltpack.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/boltpack.pc
  DESTINATION ${BOLTPACK_INSTALL_PKGCONFIGDIR}
  COMPONENT Development)

# ---- libboltpack_read ----------------------------------------------------
include(${CMAKE_CURRENT_LIST_DIR}/boltpack_read_install.cmake)
