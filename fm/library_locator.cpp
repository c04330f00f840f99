#include "fm/library_locator.hpp"

namespace nvdra::fm {

LibraryLocation locate_fm_library(const std::string& explicit_path, const std::string& driver_root) {
  // libnvfm.so.1 is the runtime package's name; upstream's plugin opens libnvfm.so (the dev link).
  return locate_driver_library(explicit_path, driver_root, {"libnvfm.so.1", "libnvfm.so"});
}

}  // namespace nvdra::fm
