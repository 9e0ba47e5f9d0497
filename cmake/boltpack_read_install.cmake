# Installation of libboltpack_read (cmake/boltpack_read.cmake): the shared
# object, a CMake package of its own (find_package(boltpack-read) ->
# boltpack::read) and boltpack-read.pc, neither naming a dependency.
# Included from cmake/install.cmake, which installs the headers and sets the
# BOLTPACK_INSTALL_* folders and the relative pkg-config paths used here.

install(TARGETS boltpack_read
  EXPORT boltpackReadTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT Runtime
          NAMELINK_COMPONENT Development)
set(_bp_read_cmakedir ${CMAKE_INSTALL_LIBDIR}/cmake/boltpack-read)
install(EXPORT boltpackReadTargets
  NAMESPACE boltpack::
  FILE boltpack-readTargets.cmake
  DESTINATION ${_bp_read_cmakedir}
  COMPONENT Development)
configure_package_config_file(
  ${CMAKE_CURRENT_LIST_DIR}/boltpack-readConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/boltpack-readConfig.cmake
  INSTALL_DESTINATION ${_bp_read_cmakedir})
write_basic_package_version_file(
  ${CMAKE_CURRENT_BINARY_DIR}/boltpack-readConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY ${_bp_compat})
install(FILES
  ${CMAKE_CURRENT_BINARY_DIR}/boltpack-readConfig.cmake
  ${CMAKE_CURRENT_BINARY_DIR}/boltpack-readConfigVersion.cmake
  DESTINATION ${_bp_read_cmakedir}
  COMPONENT Development)

configure_file(${CMAKE_CURRENT_LIST_DIR}/boltpack-read.pc.in
               ${CMAKE_CURRENT_BINARY_DIR}/boltpack-read.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/boltpack-read.pc
  DESTINATION ${BOLTPACK_INSTALL_PKGCONFIGDIR}
  COMPONENT Development)

# The static archive and its pkg-config file (cmake/boltpack_read.cmake).
if(BOLTPACK_READ_STATIC)
  install(FILES ${BOLTPACK_READ_STATIC} DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT Development)
  configure_file(${CMAKE_CURRENT_LIST_DIR}/boltpack-read-static.pc.in
                 ${CMAKE_CURRENT_BINARY_DIR}/boltpack-read-static.pc @ONLY)
  install(FILES ${CMAKE_CURRENT_BINARY_DIR}/boltpack-read-static.pc
    DESTINATION ${BOLTPACK_INSTALL_PKGCONFIGDIR}
    COMPONENT Development)
endif()
