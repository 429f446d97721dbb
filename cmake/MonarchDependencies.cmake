#===- MonarchDependencies.cmake - Third-party packages ---------------------===#
#
# Thrift 0.17 (pkg-config), Boost.Graph, Gloo, spdlog/fmt, CLI11, GoogleTest,
# and the CUDA toolkit with NCCL behind MONARCH_ENABLE_CUDA (ON when found:
# always compiled and linked where present, never required to run).
#
#===------------------------------------------------------------------------===#
find_package(PkgConfig REQUIRED)
pkg_check_modules(THRIFT REQUIRED IMPORTED_TARGET thrift>=0.17)
find_program(THRIFT_COMPILER thrift REQUIRED)
find_package(Boost 1.74 REQUIRED)
find_package(Gloo CONFIG REQUIRED HINTS /usr/share/cmake/Gloo)
find_package(fmt REQUIRED)
find_package(spdlog REQUIRED)
find_package(CLI11 CONFIG REQUIRED)
find_package(GTest REQUIRED)
find_package(Threads REQUIRED)

if(NOT CUDAToolkit_ROOT AND EXISTS /usr/local/cuda)
  set(CUDAToolkit_ROOT /usr/local/cuda)
endif()
find_package(CUDAToolkit QUIET)
find_library(NCCL_LIBRARY nccl HINTS /usr/local/cuda/lib64 ${CUDAToolkit_LIBRARY_DIR})
find_path(NCCL_INCLUDE_DIR nccl.h HINTS /usr/local/cuda/include ${CUDAToolkit_INCLUDE_DIRS})
set(_cuda_found OFF)
if(CUDAToolkit_FOUND AND NCCL_LIBRARY AND NCCL_INCLUDE_DIR)
  set(_cuda_found ON)
endif()
option(MONARCH_ENABLE_CUDA "Build the CUDA/NCCL paths" ${_cuda_found})
if(MONARCH_ENABLE_CUDA)
  if(NOT _cuda_found)
    message(FATAL_ERROR "MONARCH_ENABLE_CUDA=ON but CUDA toolkit or NCCL not found")
  endif()
  add_library(monarch_nccl INTERFACE)
  target_include_directories(monarch_nccl SYSTEM INTERFACE ${NCCL_INCLUDE_DIR})
  target_link_libraries(monarch_nccl INTERFACE ${NCCL_LIBRARY} CUDA::cudart)
  message(STATUS "CUDA ${CUDAToolkit_VERSION} and NCCL (${NCCL_LIBRARY}): enabled")
else()
  message(STATUS "CUDA/NCCL: disabled (toolkit found: ${CUDAToolkit_FOUND}, nccl: ${NCCL_LIBRARY})")
endif()

find_package(Python3 REQUIRED COMPONENTS Interpreter)
