# libboltpack_read: the C API of boltpack/boltpack.h and only what it needs
# (reader, views, budgets, decoders, the GGUF and safetensors readers), as a
# shared object that exports nothing but the bp_* functions and requires
# nothing of its consumer's build: zstd is linked in from its archive,
# Abseil and protobuf privately (see below why not statically), so
# `cc app.c $(pkg-config --cflags --libs boltpack-read)` links on a machine
# without their -dev packages. C++ engines use the header-only
# wrapper boltpack/boltpack.hpp. Included from the top-level CMakeLists.txt
# after the CLI, whose zstd archive search it reuses.
#
#   pkg-config:  cc app.c $(pkg-config --cflags --libs boltpack-read)
#   CMake:       find_package(boltpack-read REQUIRED)
#                target_link_libraries(app PRIVATE boltpack::read)

# The exported names: every BP_API declaration of the C header, so a new
# function is exported without a second list to keep in step.
file(STRINGS ${PROJECT_SOURCE_DIR}/include/boltpack/boltpack.h _bp_api_lines REGEX "^BP_API ")
# Read at configure time: an edit of the header configures again, so that a
# function added to it is exported by the next build, not by the next cmake.
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/include/boltpack/boltpack.h)
set(BOLTPACK_READ_EXPORTS "")
foreach(_line IN LISTS _bp_api_lines)
  if(_line MATCHES "(bp_[a-z0-9_]+)\\(")
    list(APPEND BOLTPACK_READ_EXPORTS ${CMAKE_MATCH_1})
  endif()
endforeach()
list(LENGTH BOLTPACK_READ_EXPORTS _bp_export_count)
if(_bp_export_count LESS 10)
  message(FATAL_ERROR "found only ${_bp_export_count} BP_API functions in boltpack.h")
endif()
list(JOIN BOLTPACK_READ_EXPORTS ";\n    " _bp_export_lines)
set(BOLTPACK_READ_VERSION_SCRIPT ${CMAKE_CURRENT_BINARY_DIR}/boltpack_read.map)
file(CONFIGURE OUTPUT ${BOLTPACK_READ_VERSION_SCRIPT} CONTENT
     "{\n  global:\n    ${_bp_export_lines};\n  local: *;\n};\n")

# Every object of the library in an archive: the linker takes from it only
# the members the exported functions reach (-u below), which leaves out the
# writer, the cutter and the rest a reader never calls.
add_library(boltpack_read_objects STATIC $<TARGET_OBJECTS:boltpack_objects> $<TARGET_OBJECTS:boltpack_proto>)

# A shared library needs one source of its own; everything else is archives.
set(_bp_read_anchor ${CMAKE_CURRENT_BINARY_DIR}/boltpack_read_anchor.c)
file(CONFIGURE OUTPUT ${_bp_read_anchor} CONTENT
     "/* libboltpack_read is linked from archives; see cmake/boltpack_read.cmake. */\ntypedef int boltpack_read_anchor;\n")
add_library(boltpack_read SHARED ${_bp_read_anchor})
add_library(boltpack::read ALIAS boltpack_read)
set(_bp_read_undefined "")
foreach(_sym IN LISTS BOLTPACK_READ_EXPORTS)
  list(APPEND _bp_read_undefined "LINKER:-u,${_sym}")
endforeach()
target_link_options(boltpack_read PRIVATE ${_bp_read_undefined}
  # Everything not named in the script is local, the archives' symbols too.
  "LINKER:--version-script=${BOLTPACK_READ_VERSION_SCRIPT}"
  "LINKER:--gc-sections" "LINKER:--as-needed"
  # Which objects the exports pulled in: the writer stays out; codecs come
  # whole (each object holds its encoder beside its decoder).
  "LINKER:-Map=${CMAKE_CURRENT_BINARY_DIR}/boltpack_read.linkmap")
# Every reference resolved at link time, except under the sanitizers: clang
# leaves their run-time symbols to the executable.
if(NOT BOLTPACK_SANITIZE AND NOT BOLTPACK_FUZZ)
  target_link_options(boltpack_read PRIVATE "LINKER:--no-undefined")
endif()
set_property(TARGET boltpack_read APPEND PROPERTY LINK_DEPENDS ${BOLTPACK_READ_VERSION_SCRIPT})
# zstd goes in from its archive. Debian's Abseil and protobuf archives
# cannot: their thread-locals use the executable-only TLS model
# (R_X86_64_TPOFF32 in absl cordz_functions.o and protobuf arena.o, "can not
# be used when making a shared object"), so those two stay shared, linked
# privately: a consumer's build needs only their run-time packages, which
# the loader finds by the DT_NEEDED entries, never their -dev packages.
if(NOT BOLTPACK_ZSTD_ARCHIVE)
  find_library(BOLTPACK_ZSTD_ARCHIVE NAMES libzstd.a HINTS ${ZSTD_LIBRARY_DIRS})
endif()
if(BOLTPACK_ZSTD_ARCHIVE)
  set(_bp_read_zstd ${BOLTPACK_ZSTD_ARCHIVE})
else()
  set(_bp_read_zstd ${ZSTD_LINK_LIBRARIES})
endif()
# The shared ones by their files, from pkg-config, not by their CMake
# targets: a target would land in the exported IMPORTED_LINK_DEPENDENT_
# LIBRARIES, which a consumer's CMake could only satisfy by finding Abseil.
# libxxhash is shared too (its archive lacks the x86 dispatch functions).
pkg_check_modules(BOLTPACK_READ_SHARED_DEPS REQUIRED absl_status absl_statusor absl_strings
                  absl_str_format absl_flat_hash_map absl_flat_hash_set protobuf)
target_link_libraries(boltpack_read PRIVATE boltpack_read_objects ${_bp_read_zstd}
                      ${BOLTPACK_READ_SHARED_DEPS_LINK_LIBRARIES} ${XXHASH_LINK_LIBRARIES} -pthread)
target_include_directories(boltpack_read INTERFACE
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include> $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
set_target_properties(boltpack_read PROPERTIES
  LINKER_LANGUAGE CXX
  C_VISIBILITY_PRESET hidden
  VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR}
  EXPORT_NAME read)

# ---- the static archive ----------------------------------------------------
# libboltpack_read.a: the library's objects and the archives of Abseil,
# protobuf and zstd merged into one file (ar's MRI script), so that a
# static consumer links it with the C++ run time alone and no -dev package
# (boltpack-read-static.pc). An executable takes only the members its calls
# reach, as the shared object does. xxhash's run-time dispatch (the fastest
# XXH3 for the CPU) exists only in its shared object: the consumer links
# the run-time package's libxxhash.so.0 by name.
find_library(BOLTPACK_ABSL_BASE_ARCHIVE NAMES libabsl_base.a)
find_library(BOLTPACK_PROTOBUF_ARCHIVE NAMES libprotobuf.a)
if(BOLTPACK_ABSL_BASE_ARCHIVE AND BOLTPACK_PROTOBUF_ARCHIVE AND BOLTPACK_ZSTD_ARCHIVE)
  get_filename_component(_bp_absl_dir ${BOLTPACK_ABSL_BASE_ARCHIVE} DIRECTORY)
  file(GLOB _bp_read_absl_archives ${_bp_absl_dir}/libabsl_*.a)
  set(BOLTPACK_READ_STATIC ${CMAKE_CURRENT_BINARY_DIR}/libboltpack_read.a)
  set(_bp_mri "CREATE ${BOLTPACK_READ_STATIC}\nADDLIB $<TARGET_FILE:boltpack_read_objects>\n")
  foreach(_archive IN LISTS _bp_read_absl_archives BOLTPACK_PROTOBUF_ARCHIVE BOLTPACK_ZSTD_ARCHIVE)
    string(APPEND _bp_mri "ADDLIB ${_archive}\n")
  endforeach()
  string(APPEND _bp_mri "SAVE\nEND\n")
  file(GENERATE OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/boltpack_read_static.mri CONTENT "${_bp_mri}")
  add_custom_command(OUTPUT ${BOLTPACK_READ_STATIC}
    COMMAND ${CMAKE_COMMAND} -E rm -f ${BOLTPACK_READ_STATIC}
    COMMAND ${CMAKE_COMMAND} -DAR=${CMAKE_AR} -DMRI=${CMAKE_CURRENT_BINARY_DIR}/boltpack_read_static.mri
            -P ${PROJECT_SOURCE_DIR}/cmake/merge_archives.cmake
    COMMAND ${CMAKE_RANLIB} ${BOLTPACK_READ_STATIC}
    DEPENDS boltpack_read_objects ${_bp_read_absl_archives} ${BOLTPACK_PROTOBUF_ARCHIVE} ${BOLTPACK_ZSTD_ARCHIVE}
            ${CMAKE_CURRENT_BINARY_DIR}/boltpack_read_static.mri
    COMMENT "Merging libboltpack_read.a with the Abseil, protobuf and zstd archives")
  add_custom_target(boltpack_read_static ALL DEPENDS ${BOLTPACK_READ_STATIC})
  # Built with the shared one, so a build of boltpack_read can install both.
  add_dependencies(boltpack_read boltpack_read_static)
else()
  message(STATUS "libboltpack_read.a not built: the Abseil, protobuf or zstd archive is missing")
endif()
