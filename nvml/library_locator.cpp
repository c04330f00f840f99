#include "nvml/library_locator.hpp"

namespace nvdra::nvml {

LibraryLocation locate_nvml_library(const std::string& explicit_path, const std::string& driver_root) {
  return locate_driver_library(explicit_path, driver_root, {"libnvidia-ml.so.1"});
}

}  // namespace nvdra::nvml
