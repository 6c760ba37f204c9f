# commsched — finds what the CUDA/NCCL runtime adaptor needs (docs/RUNTIME.md
# "CUDA"): the CUDA toolkit with nvcc (the spin kernel), NCCL (header and
# library; the toolkit of the build machines ships it under its prefix,
# elsewhere NCCL_HOME, CMAKE_PREFIX_PATH or PyTorch's nvidia-nccl wheel in
# the Python on PATH provides it) and, optionally,
# cuBLAS for --compute gemm. Sets COMMSCHED_HAVE_CUDA / _CUBLAS and the
# imported target commsched::nccl. Included only unless
# COMMSCHED_WITH_CUDA is OFF; ON turns anything missing into an error.
find_package(CUDAToolkit QUIET)
set(_cs_cuda_missing "")
if(NOT CUDAToolkit_FOUND)
  list(APPEND _cs_cuda_missing "the CUDA toolkit")
elseif(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX})
  # nvcc is rarely on PATH; the toolkit search knows where it is.
  set(CMAKE_CUDA_COMPILER "${CUDAToolkit_NVCC_EXECUTABLE}" CACHE FILEPATH
      "The CUDA compiler")
endif()
if(CUDAToolkit_FOUND)
  include(CheckLanguage)
  check_language(CUDA)
  if(NOT CMAKE_CUDA_COMPILER)
    list(APPEND _cs_cuda_missing "a working nvcc")
  endif()
endif()
# PyTorch's CUDA wheels bring NCCL as a package of their own
# (site-packages/nvidia/nccl, the library under its soname only): where
# the torch environment the tests use (COMMSCHED_TORCH_PYTHON, as `make
# test` passes build/venv's; tools/make-venv.sh adds the wheel there) or
# else the Python on PATH imports one, it is a place to look, after the
# toolkit's and NCCL_HOME.
set(_cs_py "${COMMSCHED_TORCH_PYTHON}")
if(NOT _cs_py)
  find_package(Python3 COMPONENTS Interpreter QUIET)
  set(_cs_py "${Python3_EXECUTABLE}")
endif()
set(_cs_nccl_wheel "")
if(_cs_py)
  execute_process(
    COMMAND "${_cs_py}" -c
            "import nvidia.nccl; print(list(nvidia.nccl.__path__)[0])"
    OUTPUT_VARIABLE _cs_nccl_wheel OUTPUT_STRIP_TRAILING_WHITESPACE
    ERROR_QUIET)
endif()
find_path(NCCL_INCLUDE_DIR nccl.h
  HINTS ${CUDAToolkit_INCLUDE_DIRS} ENV NCCL_HOME ${_cs_nccl_wheel}
  PATH_SUFFIXES include)
find_library(NCCL_LIBRARY NAMES nccl libnccl.so.2
  HINTS ${CUDAToolkit_LIBRARY_DIR} ENV NCCL_HOME ${_cs_nccl_wheel}
  PATH_SUFFIXES lib lib64)
if(NOT NCCL_INCLUDE_DIR OR NOT NCCL_LIBRARY)
  list(APPEND _cs_cuda_missing "NCCL (nccl.h and libnccl)")
else()
  # ncclCommSplit (per-group communicators) came with NCCL 2.18.
  file(STRINGS "${NCCL_INCLUDE_DIR}/nccl.h" _cs_nccl_ver
       REGEX "^#define NCCL_(MAJOR|MINOR) +[0-9]+")
  string(REGEX REPLACE ".*NCCL_MAJOR +([0-9]+).*" "\\1" _cs_nccl_major
         "${_cs_nccl_ver}")
  string(REGEX REPLACE ".*NCCL_MINOR +([0-9]+).*" "\\1" _cs_nccl_minor
         "${_cs_nccl_ver}")
  if("${_cs_nccl_major}.${_cs_nccl_minor}" VERSION_LESS 2.18)
    list(APPEND _cs_cuda_missing
         "NCCL >= 2.18 (found ${_cs_nccl_major}.${_cs_nccl_minor})")
  endif()
endif()

if(_cs_cuda_missing)
  list(JOIN _cs_cuda_missing ", " _cs_what)
  if(COMMSCHED_WITH_CUDA STREQUAL "ON")
    message(FATAL_ERROR "COMMSCHED_WITH_CUDA=ON but ${_cs_what} not found")
  endif()
  message(STATUS "CUDA runtime adaptor: off (not found: ${_cs_what})")
  return()
endif()

# Ampere and Hopper natively, and PTX of Hopper for whatever comes later.
if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
  set(CMAKE_CUDA_ARCHITECTURES 80-real 90)
endif()
enable_language(CUDA)
add_library(commsched::nccl UNKNOWN IMPORTED)
set_target_properties(commsched::nccl PROPERTIES
  IMPORTED_LOCATION "${NCCL_LIBRARY}"
  INTERFACE_INCLUDE_DIRECTORIES "${NCCL_INCLUDE_DIR}")
set(COMMSCHED_HAVE_CUDA 1)
# cuBLAS is opened at run time (its header at build time), by the soname
# of this toolkit's major version.
find_path(CUBLAS_INCLUDE_DIR cublas_v2.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
if(TARGET CUDA::cublas AND CUBLAS_INCLUDE_DIR)
  set(COMMSCHED_HAVE_CUBLAS 1)
  set(COMMSCHED_CUBLAS_SONAME "libcublas.so.${CUDAToolkit_VERSION_MAJOR}")
endif()
message(STATUS "CUDA runtime adaptor: on (CUDA ${CUDAToolkit_VERSION}, "
               "NCCL ${_cs_nccl_major}.${_cs_nccl_minor} ${NCCL_LIBRARY}, "
               "cuBLAS ${COMMSCHED_HAVE_CUBLAS})")
