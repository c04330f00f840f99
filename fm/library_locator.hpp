#pragma once
// Where libnvfm.so.1 is looked for: agent/base/library_search.hpp's search (the one NVML's uses), with
// libnvfm.so.1 and then libnvfm.so, the name upstream's plugin opens.
#include <string>

#include "agent/base/library_search.hpp"

namespace nvdra::fm {

using LibraryLocation = nvdra::LibraryLocation;

LibraryLocation locate_fm_library(const std::string& explicit_path, const std::string& driver_root);

}  // namespace nvdra::fm
