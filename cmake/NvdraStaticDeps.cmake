# gRPC, abseil, protobuf-lite and their C++ helpers from Debian's static archives (issue #33: start and
# idle memory). Shared, they are 55 of the agent's 69 libraries: the dynamic loader's symbol lookups and
# mappings took 4.5 of the 9 ms an exec of the agent costs, and their symbol tables and relocated pages
# 2.7 MiB of its idle RSS. Linked in, only the objects the agent calls are in it, bound at link time.
# OpenSSL, zlib, libsystemd, libstdc++ and libc stay shared: their security updates reach the agent
# through apt without a rebuild. Sanitizer builds keep everything shared (their runtimes interpose).
option(NVDRA_STATIC_CXX_DEPS "Link gRPC, abseil, protobuf-lite, c-ares, re2 and Boost.JSON statically" ON)

# The libraries taken from their archives, by file name (libNAME.so… → libNAME.a beside it).
set(NVDRA_STATIC_DEP_NAMES
  "^lib(grpc(\\+\\+)?(_unsecure)?|gpr|upb|address_sorting|absl_[a-z0-9_]+|protobuf-lite|cares|re2|boost_json|boost_container)$")

# Swaps an imported target's shared library for the archive next to it, in every configuration.
function(nvdra_use_static_archive target)
  get_target_property(_type ${target} TYPE)
  if(NOT _type STREQUAL "SHARED_LIBRARY" AND NOT _type STREQUAL "UNKNOWN_LIBRARY")
    return()
  endif()
  get_target_property(_configs ${target} IMPORTED_CONFIGURATIONS)
  set(_props IMPORTED_LOCATION)
  foreach(_c IN LISTS _configs)
    list(APPEND _props IMPORTED_LOCATION_${_c})
  endforeach()
  foreach(_p IN LISTS _props)
    get_target_property(_loc ${target} ${_p})
    if(NOT _loc)
      continue()
    endif()
    get_filename_component(_dir "${_loc}" DIRECTORY)
    get_filename_component(_file "${_loc}" NAME)
    string(REGEX REPLACE "\\.so(\\.[0-9.]+)?$" "" _name "${_file}")
    if(NOT _name MATCHES "${NVDRA_STATIC_DEP_NAMES}" OR NOT EXISTS "${_dir}/${_name}.a")
      continue()
    endif()
    set_target_properties(${target} PROPERTIES ${_p} "${_dir}/${_name}.a")
    # An archive has no SONAME: CMake must not link it as -lNAME or record it as a runtime dependency.
    set_property(TARGET ${target} PROPERTY IMPORTED_NO_SONAME TRUE)
  endforeach()
endfunction()

if(NVDRA_STATIC_CXX_DEPS AND NOT NVDRA_ANY_SANITIZER)
  get_property(_imported DIRECTORY PROPERTY IMPORTED_TARGETS)
  foreach(_t IN LISTS _imported)
    nvdra_use_static_archive(${_t})
  endforeach()
  # grpc++ names the full protobuf runtime; every message here is lite, and two copies of protobuf's
  # runtime (the lite archive and the full shared library) must not meet in one process.
  foreach(_t gRPC::grpc++ gRPC::grpc++_unsecure gRPC::grpc++_alts gRPC::grpc++_error_details gRPC::grpc++_reflection)
    if(TARGET ${_t})
      get_target_property(_links ${_t} INTERFACE_LINK_LIBRARIES)
      list(TRANSFORM _links REPLACE "^protobuf::libprotobuf$" "protobuf::libprotobuf-lite")
      set_property(TARGET ${_t} PROPERTY INTERFACE_LINK_LIBRARIES "${_links}")
    endif()
  endforeach()
  # gRPC names re2 as a bare library ("-lre2"): point it at the archive too.
  set(_re2 /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/libre2.a)
  if(TARGET re2::re2 AND EXISTS ${_re2})
    get_target_property(_type re2::re2 TYPE)
    if(_type STREQUAL "INTERFACE_LIBRARY")
      set_property(TARGET re2::re2 PROPERTY INTERFACE_LINK_LIBRARIES ${_re2})
    endif()
  endif()
endif()
