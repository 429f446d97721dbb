#===- MonarchInstall.cmake - What `pip install .` puts in the wheel -------===#
#
# The Python package is self-contained: `cmake --install` (run by
# scikit-build-core, pyproject.toml) lays out, under the install prefix,
#
#   monarch_compile/_monarch_native*.so   the extension
#   monarch_compile/bin/                  monarch-worker and the tools
#   monarch_compile/lib/                  the project's shared libraries
#
# with run paths relative to those folders, so the package finds its worker
# and libraries wherever pip put it, with no MONARCH_BUILD_DIR. The system
# libraries (LLVM/MLIR 22, Thrift, Gloo, OpenBLAS) stay where the Debian
# packages put them; LLVM's folder is added to the run path because it is
# not on the loader's default path. Everything is in the `python` component.
#
#===------------------------------------------------------------------------===#
set(_pkg monarch_compile)

get_property(_libs GLOBAL PROPERTY MONARCH_INSTALLED_LIBRARIES)
set_target_properties(${_libs} MonarchWorkerCuda PROPERTIES
  INSTALL_RPATH "$ORIGIN;${LLVM_LIBRARY_DIR}")
# MonarchWorkerCuda is loaded with dlopen by a worker that runs a device
# plan (DeviceArenaLoader).
install(TARGETS ${_libs} MonarchWorkerCuda
  LIBRARY DESTINATION ${_pkg}/lib COMPONENT python)

set(_tools monarch-worker monarch-compile monarch-run monarch-opt
  monarch-kernels)
set_target_properties(${_tools} PROPERTIES
  INSTALL_RPATH "$ORIGIN/../lib;${LLVM_LIBRARY_DIR}")
install(TARGETS ${_tools} RUNTIME DESTINATION ${_pkg}/bin COMPONENT python)

if(TARGET _monarch_native)
  set_target_properties(_monarch_native PROPERTIES
    INSTALL_RPATH "$ORIGIN/lib;${LLVM_LIBRARY_DIR}")
  install(TARGETS _monarch_native LIBRARY DESTINATION ${_pkg}
    COMPONENT python)
endif()
