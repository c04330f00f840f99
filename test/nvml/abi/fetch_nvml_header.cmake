# Fetches NVIDIA's nvml.h from Debian's non-free libnvidia-ml-dev into the build tree, from the
# Debian mirror the machine's apt is configured with (contrib/dev/debian-mirror), without touching
# the machine's apt state: a private sources list, lists and cache directory.
# Sets NVDRA_NVML_HEADER_DIR (empty when the package cannot be had, e.g. offline) and
# NVDRA_NVML_HEADER_WHY.
set(_root ${CMAKE_BINARY_DIR}/nvml-header)
set(NVDRA_NVML_HEADER_DIR "")
set(NVDRA_NVML_HEADER_WHY "")
if(EXISTS ${_root}/x/usr/include/nvml.h)
  set(NVDRA_NVML_HEADER_DIR ${_root}/x/usr/include)
  return()
endif()
find_program(_apt_get apt-get)
find_program(_dpkg_deb dpkg-deb)
if(NOT _apt_get OR NOT _dpkg_deb)
  set(NVDRA_NVML_HEADER_WHY "apt-get or dpkg-deb is not installed")
  return()
endif()
execute_process(COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/contrib/dev/debian-mirror --sources-line non-free
                OUTPUT_VARIABLE _line ERROR_VARIABLE _err RESULT_VARIABLE _rc OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT _rc EQUAL 0)
  string(STRIP "${_err}" _err)
  set(NVDRA_NVML_HEADER_WHY "no Debian mirror in this machine's apt sources: ${_err}")
  return()
endif()
file(MAKE_DIRECTORY ${_root}/lists/partial ${_root}/archives/partial ${_root}/cache)
file(WRITE ${_root}/sources.list "${_line}\n")
set(_apt_opts -o Dir::Etc::SourceList=${_root}/sources.list -o Dir::Etc::SourceParts=/dev/null
    -o Dir::State::Lists=${_root}/lists -o Dir::Cache=${_root}/cache -o Dir::Cache::Archives=${_root}/archives
    -o Debug::NoLocking=1 -o APT::Sandbox::User=root -q)
execute_process(COMMAND ${_apt_get} ${_apt_opts} update RESULT_VARIABLE _rc OUTPUT_QUIET ERROR_VARIABLE _err TIMEOUT 120)
if(_rc EQUAL 0)
  execute_process(COMMAND ${_apt_get} ${_apt_opts} download libnvidia-ml-dev WORKING_DIRECTORY ${_root}
                  RESULT_VARIABLE _rc OUTPUT_QUIET ERROR_VARIABLE _err TIMEOUT 120)
endif()
file(GLOB _deb ${_root}/libnvidia-ml-dev_*.deb)
if(NOT _rc EQUAL 0 OR NOT _deb)
  string(STRIP "${_err}" _err)
  set(NVDRA_NVML_HEADER_WHY "could not fetch Debian's libnvidia-ml-dev (offline?): ${_err}")
  return()
endif()
list(GET _deb 0 _deb)
execute_process(COMMAND ${_dpkg_deb} -x ${_deb} ${_root}/x RESULT_VARIABLE _rc)
if(_rc EQUAL 0 AND EXISTS ${_root}/x/usr/include/nvml.h)
  set(NVDRA_NVML_HEADER_DIR ${_root}/x/usr/include)
else()
  set(NVDRA_NVML_HEADER_WHY "dpkg-deb could not extract ${_deb}")
endif()
