# nvdra_pack_relative_relocs(target): the executable's relative relocations packed (DT_RELR) instead of one
# 24-byte RELA entry each (issue #33: idle memory). The agent's 12,700 of them were a 358 KB .rela.dyn that
# every exec reads and that stays resident; packed, they take 2.4 KB, and the agent's RSS on an 8-GPU node is
# ~0.6 MiB lower. glibc applies both forms alike since 2.36. Release trees linked by lld only (the sanitizer
# runtimes keep their own layout), and only where the C library defines GLIBC_ABI_DT_RELR: a glibc that does
# not would refuse to load the executable.
include(CheckCXXSourceCompiles)
set(NVDRA_RELR OFF)
if(NVDRA_LLD AND CMAKE_CXX_COMPILER_ID STREQUAL "Clang" AND NOT NVDRA_ANY_SANITIZER)
  file(READ ${CMAKE_CURRENT_LIST_DIR}/relr_dependency.cpp _relr_source)
  set(CMAKE_REQUIRED_LINK_OPTIONS -fuse-ld=lld -Wl,--pack-dyn-relocs=relr)
  check_cxx_source_compiles("${_relr_source}\nint main() { return 0; }" NVDRA_GLIBC_READS_RELR)
  unset(CMAKE_REQUIRED_LINK_OPTIONS)
  if(NVDRA_GLIBC_READS_RELR)
    set(NVDRA_RELR ON)
  endif()
endif()

function(nvdra_pack_relative_relocs target)
  if(NOT NVDRA_RELR)
    return()
  endif()
  target_sources(${target} PRIVATE ${PROJECT_SOURCE_DIR}/cmake/relr_dependency.cpp)
  target_link_options(${target} PRIVATE -Wl,--pack-dyn-relocs=relr)
endfunction()
