#include "nvml/library_locator.hpp"

#include <filesystem>
#include <system_error>

namespace nvdra::nvml {

namespace fs = std::filesystem;

LibraryLocation locate_nvml_library(const std::string& explicit_path, const std::string& driver_root) {
  static constexpr const char* kSoname = "libnvidia-ml.so.1";
  LibraryLocation out;
  if (!explicit_path.empty()) {
    out.path = explicit_path;
    out.searched.push_back(explicit_path);
    return out;
  }
  const std::string root = (driver_root.empty() || driver_root == "/") ? "" : driver_root;
  static constexpr const char* kDirs[] = {
      "",
      "/usr/lib64",
      "/usr/lib/x86_64-linux-gnu",
      "/usr/lib/aarch64-linux-gnu",
      "/lib64",
      "/lib/x86_64-linux-gnu",
      "/lib/aarch64-linux-gnu",
      "/usr/lib/x86_64-linux-gnu/nvidia/current",  // Debian's layout (the toolkit looks here too)
      "/usr/lib/aarch64-linux-gnu/nvidia/current",
  };
  for (const char* dir : kDirs) {
    const std::string candidate = root + dir + "/" + kSoname;
    out.searched.push_back(candidate);
    std::error_code ec;
    if (!fs::exists(candidate, ec)) continue;
    const fs::path resolved = fs::canonical(candidate, ec);
    out.path = ec ? candidate : resolved.string();
    return out;
  }
  out.path = kSoname;
  out.searched.push_back(std::string(kSoname) + " (dynamic loader search path)");
  return out;
}

}  // namespace nvdra::nvml
