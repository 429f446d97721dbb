#===- AddMonarch.cmake - Helpers for monarch-compile targets ---------------===#
#
# Two kinds of C++ targets exist in this project:
#  * MLIR-facing code (dialect, passes, codegen, frontend, tools) links the
#    `MLIR` and `LLVM` shared libraries and is built without exceptions, like
#    LLVM itself;
#  * runtime code (executor, Thrift and Gloo glue) is built with exceptions on
#    and never includes MLIR headers.
#
#===------------------------------------------------------------------------===#

# monarch_record_installed_library(name): a shared library the Python
# package carries (cmake/MonarchInstall.cmake installs every one recorded).
# Libraries of tests, benchmarks, examples and the executor's fakes stay
# out of the package.
function(monarch_record_installed_library name)
  file(RELATIVE_PATH _rel ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR})
  if(NOT _rel MATCHES "^(tests|bench|examples)(/|$)|/testing$")
    set_property(GLOBAL APPEND PROPERTY MONARCH_INSTALLED_LIBRARIES ${name})
  endif()
endfunction()

# monarch_add_mlir_library(name SRCS... [DEPENDS tgt...] [LINK libs...])
function(monarch_add_mlir_library name)
  cmake_parse_arguments(ARG "" "" "DEPENDS;LINK" ${ARGN})
  add_library(${name} SHARED ${ARG_UNPARSED_ARGUMENTS})
  monarch_record_installed_library(${name})
  target_compile_options(${name} PRIVATE ${MONARCH_WARNING_FLAGS} -fno-exceptions)
  if(ARG_DEPENDS)
    add_dependencies(${name} ${ARG_DEPENDS})
  endif()
  target_link_libraries(${name} PUBLIC MLIR LLVM ${ARG_LINK})
endfunction()

# monarch_add_runtime_library(name SRCS... [LINK libs...])
function(monarch_add_runtime_library name)
  cmake_parse_arguments(ARG "" "" "LINK" ${ARGN})
  add_library(${name} SHARED ${ARG_UNPARSED_ARGUMENTS})
  monarch_record_installed_library(${name})
  target_compile_options(${name} PRIVATE ${MONARCH_WARNING_FLAGS} -fexceptions)
  target_link_libraries(${name} PUBLIC ${ARG_LINK})
endfunction()

# monarch_add_tool(name SRCS... [LINK libs...])
function(monarch_add_tool name)
  cmake_parse_arguments(ARG "" "" "LINK" ${ARGN})
  add_executable(${name} ${ARG_UNPARSED_ARGUMENTS})
  target_compile_options(${name} PRIVATE ${MONARCH_WARNING_FLAGS})
  target_link_libraries(${name} PRIVATE ${ARG_LINK})
endfunction()

# monarch_add_doc(td_name out_name tblgen_args...): generates Markdown from
# ODS into build/docs/ and copies it to docs/generated/ in the source tree
# (ignored by git) at build time, as part of the default `all` target.
function(monarch_add_doc td_name out_name)
  add_mlir_doc(${td_name} ${out_name} "" ${ARGN})
  set(_src ${MLIR_BINARY_DIR}/docs/${out_name}.md)
  set(_dst ${PROJECT_SOURCE_DIR}/docs/generated/${out_name}.md)
  add_custom_command(OUTPUT ${_dst}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${PROJECT_SOURCE_DIR}/docs/generated
    COMMAND ${CMAKE_COMMAND} -E copy_if_different ${_src} ${_dst}
    DEPENDS ${out_name}DocGen ${_src})
  add_custom_target(${out_name}Docs ALL DEPENDS ${_dst})
endfunction()
