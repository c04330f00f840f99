#pragma once
// Where libnvidia-ml.so.1 is looked for, as upstream does (nvml.md §5.2): an explicit path wins;
// else <root>/libnvidia-ml.so.1 and the root's library directories (symlinks resolved, the
// resolved file is what gets opened); else the bare SONAME for the dynamic loader's search path.
#include <string>

#include "agent/base/library_search.hpp"

namespace nvdra::nvml {

using LibraryLocation = nvdra::LibraryLocation;

LibraryLocation locate_nvml_library(const std::string& explicit_path, const std::string& driver_root);

}  // namespace nvdra::nvml
