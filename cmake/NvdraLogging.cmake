# nvdra_logging: spdlog and fmt for every target that logs or formats.
#
# The agent's own builds compile both into it from Debian's headers (cmake/logging/) instead of
# loading libspdlog.so and libfmt.so (issue #33: start). Debian links those with -z now, so each
# exec looked up all of spdlog's 1,193 bindings (its calls into itself included) before main: about
# 1.9 M of the 12.9 M instructions an exec of the agent cost (callgrind, `nvdra-agent --version`).
# Compiled in, the linker binds them and drops what the agent never calls. The headers are
# Debian's, so the code is the packaged version; neither library is on the agent's TLS or input
# paths. Sanitizer builds keep the shared libraries, as they keep every other one
# (NvdraStaticDeps.cmake), and so does -DNVDRA_STATIC_CXX_DEPS=OFF.
add_library(nvdra_logging INTERFACE)
if(NVDRA_STATIC_CXX_DEPS AND NOT NVDRA_ANY_SANITIZER)
  add_library(nvdra_logging_compiled STATIC ${CMAKE_SOURCE_DIR}/cmake/logging/spdlog_compiled.cpp
                                            ${CMAKE_SOURCE_DIR}/cmake/logging/fmt_compiled.cpp)
  get_target_property(_spdlog_includes spdlog::spdlog_header_only INTERFACE_INCLUDE_DIRECTORIES)
  get_target_property(_fmt_includes fmt::fmt-header-only INTERFACE_INCLUDE_DIRECTORIES)
  target_include_directories(nvdra_logging_compiled SYSTEM PUBLIC ${_spdlog_includes} ${_fmt_includes})
  # As libspdlog.so's users compile, less SPDLOG_SHARED_LIB (which only marks symbols for export).
  target_compile_definitions(nvdra_logging_compiled PUBLIC SPDLOG_COMPILED_LIB SPDLOG_FMT_EXTERNAL)
  target_compile_features(nvdra_logging_compiled PUBLIC cxx_std_20)
  # Position-independent: a shared object (a mock library) may link it as well as the agent.
  set_target_properties(nvdra_logging_compiled PROPERTIES POSITION_INDEPENDENT_CODE ON)
  target_link_libraries(nvdra_logging_compiled PUBLIC Threads::Threads)
  target_link_libraries(nvdra_logging INTERFACE nvdra_logging_compiled)
else()
  target_link_libraries(nvdra_logging INTERFACE spdlog::spdlog fmt::fmt)
endif()
