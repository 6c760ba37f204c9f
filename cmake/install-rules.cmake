# commsched — what `cmake --install` (and `make install`) puts where.
#
#   <prefix>/include/commsched/*.h          public headers + generated config.h
#   <prefix>/<libdir>/libcommsched.so.X.Y.Z shared library (soname .so.MAJOR)
#   <prefix>/<libdir>/libcommsched.a        static library
#   <prefix>/<libdir>/libcommsched_runtime.a the runtimes (MPI, CUDA/NCCL),
#                                           kept out of the shared library
#   <prefix>/<libdir>/libcommsched_import.{so,a} the importers (protobuf-c,
#                                           zlib), kept out of it too
#   <prefix>/<libdir>/pkgconfig/commsched.pc
#   <prefix>/<libdir>/cmake/commsched/      CMake package (find_package)
#   <prefix>/bin/commsched                  the CLI (tools/CMakeLists.txt)
#
# The CMake package exports two targets:
#   commsched::commsched         the shared library. Its public headers need
#                                only the C library, so the package config
#                                looks for nothing (no find_dependency).
#   commsched::commsched_static  the static archive, loaded only when asked
#                                for with find_package(commsched COMPONENTS
#                                static): an archive's users must also link
#                                its private dependencies (jansson, igraph,
#                                libm, OpenMP and MPI when built with them),
#                                which the config then finds the way the
#                                build did (pkg-config, FindOpenMP, FindMPI).
# Both the package and commsched.pc are relocatable: they locate the prefix
# from their own path, so a staging install (`cmake --install --prefix
# STAGE`, or DESTDIR=...) is usable in place.
include(CMakePackageConfigHelpers)

set(COMMSCHED_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/commsched"
    CACHE STRING "Where the CMake package files go, relative to the prefix")
mark_as_advanced(COMMSCHED_INSTALL_CMAKEDIR)

set_target_properties(commsched PROPERTIES EXPORT_NAME commsched)
set_target_properties(commsched_static PROPERTIES EXPORT_NAME commsched_static)

install(TARGETS commsched
  EXPORT commschedTargets
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS commsched_static
  EXPORT commschedStaticTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
# The runtimes (commsched/runtime.h) live in their own archive so the shared
# library never depends on MPI or CUDA; a program that executes schedules
# links libcommsched_runtime.a, libcommsched, MPI and (where the CUDA adaptor
# was built) libcudart, libnccl and libdl.
install(TARGETS commsched_runtime
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
# The importers (commsched/import.h) likewise, so the plugin library never
# depends on protobuf-c or zlib: libcommsched_import.so (beside
# libcommsched.so, what the Python binding's commsched.load loads) and
# libcommsched_import.a (link protobuf-c, zlib and jansson with it).
install(TARGETS commsched_import_shared commsched_import
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})

install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/commsched
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.h")
install(FILES ${PROJECT_BINARY_DIR}/include/commsched/config.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/commsched)

install(EXPORT commschedTargets
        NAMESPACE commsched::
        DESTINATION ${COMMSCHED_INSTALL_CMAKEDIR})
install(EXPORT commschedStaticTargets
        NAMESPACE commsched::
        DESTINATION ${COMMSCHED_INSTALL_CMAKEDIR})

configure_file(${PROJECT_SOURCE_DIR}/cmake/commschedConfig.cmake.in
               ${PROJECT_BINARY_DIR}/commschedConfig.cmake @ONLY)
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/commschedConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/commschedConfig.cmake
              ${PROJECT_BINARY_DIR}/commschedConfigVersion.cmake
        DESTINATION ${COMMSCHED_INSTALL_CMAKEDIR})

# commsched.pc: prefix computed from the .pc file's own place (pkg-config's
# ${pcfiledir}) unless the directories are absolute.
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(COMMSCHED_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
  set(COMMSCHED_PC_LIBDIR "${CMAKE_INSTALL_LIBDIR}")
else()
  file(RELATIVE_PATH _commsched_up "/p/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/p")
  string(REGEX REPLACE "/$" "" _commsched_up "${_commsched_up}")
  set(COMMSCHED_PC_PREFIX "\${pcfiledir}/${_commsched_up}")
  set(COMMSCHED_PC_LIBDIR "\${prefix}/${CMAKE_INSTALL_LIBDIR}")
endif()
if(IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  set(COMMSCHED_PC_INCLUDEDIR "${CMAKE_INSTALL_INCLUDEDIR}")
else()
  set(COMMSCHED_PC_INCLUDEDIR "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
endif()
# Libs.private: what the static archive needs, as the build linked it:
# jansson and igraph as shared libraries (their own Libs.private, e.g.
# igraph's glpk and arpack, are for fully static programs only, so they
# are not pulled in through Requires.private), libm, OpenMP, MPI.
set(COMMSCHED_PC_LIBS_PRIVATE "")
foreach(_commsched_flag IN LISTS JANSSON_LDFLAGS IGRAPH_LDFLAGS)
  string(APPEND COMMSCHED_PC_LIBS_PRIVATE " ${_commsched_flag}")
endforeach()
string(APPEND COMMSCHED_PC_LIBS_PRIVATE " -lm")
if(OpenMP_C_FOUND)
  string(APPEND COMMSCHED_PC_LIBS_PRIVATE " ${OpenMP_C_FLAGS}")
endif()
if(COMMSCHED_HAVE_MPI)
  # MPI has no portable pkg-config name (ompi-c, mpich, ...): its libraries
  # by path, as FindMPI found them.
  foreach(_commsched_lib IN LISTS MPI_C_LIBRARIES)
    string(APPEND COMMSCHED_PC_LIBS_PRIVATE " ${_commsched_lib}")
  endforeach()
endif()
string(STRIP "${COMMSCHED_PC_LIBS_PRIVATE}" COMMSCHED_PC_LIBS_PRIVATE)
configure_file(${PROJECT_SOURCE_DIR}/cmake/commsched.pc.in
               ${PROJECT_BINARY_DIR}/commsched.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/commsched.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
