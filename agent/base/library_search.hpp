#pragma once
// Where an NVIDIA driver library is looked for (NVML, FabricManager): an explicit path wins; else the
// driver root's library directories (distribution and Debian layouts), each name in turn; else the
// first name bare, for the dynamic loader's search path. One search for every library, so a layout
// learnt for one (e.g. Debian's nvidia/current) serves all.
#include <filesystem>
#include <initializer_list>
#include <string>
#include <system_error>
#include <vector>

namespace nvdra {

struct LibraryLocation {
  std::string path;                   // what to dlopen
  std::vector<std::string> searched;  // for the error message when nothing loads
};

inline LibraryLocation locate_driver_library(const std::string& explicit_path, const std::string& driver_root,
                                             std::initializer_list<const char*> names) {
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
  for (const char* dir : kDirs)
    for (const char* name : names) {
      const std::string candidate = root + dir + "/" + name;
      out.searched.push_back(candidate);
      std::error_code ec;
      if (!std::filesystem::exists(candidate, ec)) continue;
      const auto resolved = std::filesystem::canonical(candidate, ec);
      out.path = ec ? candidate : resolved.string();
      return out;
    }
  out.path = *names.begin();
  out.searched.push_back(out.path + " (dynamic loader search path)");
  return out;
}

}  // namespace nvdra
