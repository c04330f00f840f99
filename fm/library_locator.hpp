#pragma once
// Where libnvfm.so.1 is looked for: an explicit path wins; else <driver root>/ and the root's
// library directories (libnvfm.so.1, then libnvfm.so, the name upstream's plugin opens) (the layout nvml/library_locator.hpp searches for libnvidia-ml.so.1, which
// the FM package shares); else the bare SONAME for the dynamic loader's search path.
#include <string>
#include <vector>

namespace nvdra::fm {

struct LibraryLocation {
  std::string path;                   // what to dlopen
  std::vector<std::string> searched;  // for the error message when nothing loads
};

LibraryLocation locate_fm_library(const std::string& explicit_path, const std::string& driver_root);

}  // namespace nvdra::fm
