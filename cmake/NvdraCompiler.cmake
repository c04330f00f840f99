# Compiler policy: warnings are errors everywhere, optional ASan+UBSan, ccache when present.
find_program(NVDRA_CCACHE ccache)
if(NVDRA_CCACHE)
  set(CMAKE_C_COMPILER_LAUNCHER ${NVDRA_CCACHE})
  set(CMAKE_CXX_COMPILER_LAUNCHER ${NVDRA_CCACHE})
endif()

option(NVDRA_SANITIZE "Build with AddressSanitizer + UndefinedBehaviorSanitizer" OFF)
option(NVDRA_TSAN "Build with ThreadSanitizer (contrib/dev/build tsan)" OFF)
if(NVDRA_SANITIZE AND NVDRA_TSAN)
  message(FATAL_ERROR "NVDRA_SANITIZE and NVDRA_TSAN exclude each other (ASan and TSan cannot share a process)")
endif()
# Any sanitizer: its runtime lives in the executables, so shared objects keep undefined symbols.
if(NVDRA_SANITIZE OR NVDRA_TSAN)
  set(NVDRA_ANY_SANITIZER ON)
else()
  set(NVDRA_ANY_SANITIZER OFF)
endif()

add_library(nvdra_warnings INTERFACE)
target_compile_options(nvdra_warnings INTERFACE -Wall -Wextra -Werror -Wno-missing-field-initializers)

if(NVDRA_SANITIZE)
  set(_san -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    # clang 14's -fsanitize=function (part of "undefined") cannot emit coroutine frames
    # ("Cannot represent a difference across sections"); the other UBSan checks stay on.
    list(APPEND _san -fno-sanitize=function)
  endif()
  add_compile_options(${_san})
  # GCC 12's flow analysis under the sanitizers reports maybe-uninitialized inside libstdc++
  # (std::function, std::optional) where there is none; the release build keeps the warning.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    add_compile_options(-Wno-maybe-uninitialized)
  endif()
  add_link_options(${_san})
endif()
if(NVDRA_TSAN)
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer)
  add_link_options(-fsanitize=thread)
endif()

# Headers of third-party libraries are not ours to fix: include them as SYSTEM so -Werror stays ours.
set(CMAKE_NO_SYSTEM_FROM_IMPORTED OFF)

# lld links the ~80 test and bench executables several times faster than GNU ld on CI's 2 cores.
find_program(NVDRA_LLD ld.lld)
set(NVDRA_TEXT_ORDER OFF)
if(NVDRA_LLD AND CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  add_link_options(-fuse-ld=lld)
  # Unreferenced sections dropped and identical functions folded where no address is taken (clang's
  # address-significance tables make --icf=safe exact): the stripped agent is 4% smaller.
  if(NOT NVDRA_ANY_SANITIZER)
    add_link_options(-Wl,--gc-sections,--icf=safe)
    # A section per function: the unreferenced ones go one by one, and agent/text-order.txt can lay
    # out the functions a running agent calls together, apart from those it never calls (issue #33).
    add_compile_options(-ffunction-sections -fdata-sections)
    set(NVDRA_TEXT_ORDER ON)
  endif()
endif()

# Release trees build the product (agent, nvdractl, their libraries) for size, -Oz: it is coroutine
# glue waiting on the API server, kubelet and fsync, where the prepare path shows no difference, and
# the stripped agent is 20% smaller than at -Os (5.42 -> 4.35 MB) with 0.9 MB less resident text
# (issue #16: size and idle RSS against upstream's binaries). test/ and bench/ get the -O2 flags back
# (top-level CMakeLists), and so do the GPU mocks (nvdra_build_for_speed): they stand in for hardware
# in every start and prepare that bench/ times. (-Oz once aborted the agent: an ODR violation in our
# build, not the optimiser; agent_simdjson_abi guards it.)
set(NVDRA_SPEED_CXX_FLAGS_RELWITHDEBINFO "${CMAKE_CXX_FLAGS_RELWITHDEBINFO}")
if(NOT NVDRA_ANY_SANITIZER)
  string(REPLACE "-O2" "-Oz" CMAKE_CXX_FLAGS_RELWITHDEBINFO "${CMAKE_CXX_FLAGS_RELWITHDEBINFO}")
endif()
function(nvdra_build_for_speed target)
  if(NOT NVDRA_ANY_SANITIZER)
    target_compile_options(${target} PRIVATE $<$<CONFIG:RelWithDebInfo>:-O2>)
  endif()
endfunction()
