#include "fm/library_locator.hpp"

#include <filesystem>
#include <system_error>

namespace nvdra::fm {

LibraryLocation locate_fm_library(const std::string& explicit_path, const std::string& driver_root) {
  static constexpr const char* kSoname = "libnvfm.so.1";
  LibraryLocation out;
  if (!explicit_path.empty()) {
    out.path = explicit_path;
    out.searched.push_back(explicit_path);
    return out;
  }
  const std::string root = (driver_root.empty() || driver_root == "/") ? "" : driver_root;
  static constexpr const char* kDirs[] = {"",     "/usr/lib64", "/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
                                          "/lib64", "/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu"};
  // libnvfm.so.1 is the runtime package's name; upstream's plugin opens libnvfm.so (the dev link).
  for (const char* dir : kDirs)
    for (const char* name : {kSoname, "libnvfm.so"}) {
      const std::string candidate = root + dir + "/" + name;
      out.searched.push_back(candidate);
      std::error_code ec;
      if (!std::filesystem::exists(candidate, ec)) continue;
      const auto resolved = std::filesystem::canonical(candidate, ec);
      out.path = ec ? candidate : resolved.string();
      return out;
    }
  out.path = kSoname;
  out.searched.push_back(std::string(kSoname) + " (dynamic loader search path)");
  return out;
}

}  // namespace nvdra::fm
