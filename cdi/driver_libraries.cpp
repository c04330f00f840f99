#include "cdi/driver_libraries.hpp"

#include <algorithm>
#include <filesystem>
#include <set>

#include "agent/base/log.hpp"
#include "cdi/ld_so_cache.hpp"
#include "cdi/root_path.hpp"

namespace nvdra::cdi {
namespace {

namespace fs = std::filesystem;

std::string dir_of(const std::string& p) { return p.substr(0, p.rfind('/')); }
std::string base_of(const std::string& p) { return p.substr(p.rfind('/') + 1); }

// Files in one directory of the root whose names contain ".so", sorted for stable output.
std::vector<LibraryCandidate> dir_candidates(const std::string& root, const std::string& dir) {
  std::vector<LibraryCandidate> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(join_root(root, dir), ec)) {
    auto name = entry.path().filename().string();
    if (name.find(".so") != std::string::npos) out.push_back({name, (dir == "/" ? "" : dir) + "/" + name});
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.path < b.path; });
  return out;
}

// "libcuda.so.580.95.05" -> "580.95.05" for stem "libcuda.so.".
std::string version_suffix(const std::string& file, const std::string& stem) {
  return file.starts_with(stem) ? file.substr(stem.size()) : std::string();
}

}  // namespace

const std::vector<std::string>& library_search_dirs() {
  static const std::vector<std::string> dirs{
      "/",
      "/usr/lib64",
      "/usr/lib/x86_64-linux-gnu",
      "/usr/lib/aarch64-linux-gnu",
      "/usr/lib/x86_64-linux-gnu/nvidia/current",
      "/usr/lib/aarch64-linux-gnu/nvidia/current",
      "/lib64",
      "/lib/x86_64-linux-gnu",
      "/lib/aarch64-linux-gnu",
      "/lib/x86_64-linux-gnu/nvidia/current",
      "/lib/aarch64-linux-gnu/nvidia/current",
  };
  return dirs;
}

std::vector<LibraryCandidate> library_candidates(RootResolver& resolver) {
  const std::string& root = resolver.root();
  std::vector<LibraryCandidate> out;
  auto cache_path = join_root(root, "/etc/ld.so.cache");
  auto cache = read_ld_so_cache(cache_path);
  if (cache) {
    for (const auto& e : *cache) {
      bool native = (e.flags & kLdFlagTypeMask) == kLdFlagElfLibc6 &&
                    (e.flags & kLdFlagRequiredMask) == native_ld_arch_flag();
      if (native && !e.path.empty() && e.path.front() == '/') out.push_back({e.name, e.path});
    }
  } else {
    logger("cdi")->debug("driver discovery: {}, searching library directories only", cache.error().message);
  }
  // A merged /usr makes /lib/<arch> the same directory as /usr/lib/<arch>: list it once, by the
  // name searched first.
  std::set<std::string> listed;
  for (const auto& dir : library_search_dirs()) {
    auto real = resolver.resolve(dir);
    if (!real || !listed.insert(*real).second) continue;
    auto found = dir_candidates(root, dir);
    out.insert(out.end(), found.begin(), found.end());
  }
  return out;
}

Result<DriverLibraries> discover_libraries(RootResolver& resolver) {
  const std::string& root = resolver.root();
  auto candidates = library_candidates(resolver);
  DriverLibraries out;
  // The version comes from the file libcuda.so.1 resolves to (libnvidia-ml as a fallback), as
  // the toolkit infers it (nvml.md §5.1).
  for (const std::string stem : {"libcuda.so.", "libnvidia-ml.so."}) {
    for (const auto& c : candidates) {
      if (c.name != stem + "1") continue;
      auto real = resolver.resolve(c.path);
      if (!real) continue;
      auto version = version_suffix(base_of(*real), stem);
      if (version.empty() || version == "1") continue;
      out.version = version;
      if (stem == "libcuda.so.") {
        out.libcuda = *real;
        out.libcuda_link = c.path;
      }
      break;
    }
    if (!out.libcuda.empty()) break;
  }
  if (out.libcuda.empty()) {
    std::string looked = join_root(root, "/etc/ld.so.cache");
    for (const auto& dir : library_search_dirs()) looked += ", " + join_root(root, dir);
    Error e = make_error(ErrorCode::kFailedPrecondition,
                         "libcuda.so.1 (pointing at libcuda.so.<driver version>) not found under driver root " +
                             root + "; looked in " + looked +
                             ". Set --nvidia-driver-root/--container-driver-root to where the NVIDIA driver is "
                             "installed");
    e.field = "nvidia-driver-root";
    return e;
  }
  const std::string suffix = ".so." + out.version;
  std::set<std::string> libs, dirs;
  for (const auto& c : candidates) {
    auto real = resolver.resolve(c.path);
    if (real && real->ends_with(suffix) && libs.insert(*real).second) dirs.insert(dir_of(*real));
  }
  // Links that lead to a driver library (libcuda.so.1, libcuda.so, …) in the libraries' own dirs.
  std::set<std::string> seen_links;
  for (const auto& dir : dirs) {
    for (const auto& c : dir_candidates(root, dir)) {
      auto text = resolver.link_text(c.path);
      if (!text) continue;
      auto real = resolver.resolve(c.path);
      if (real && libs.count(*real) && seen_links.insert(c.path).second) out.links.push_back({*text, c.path});
    }
  }
  out.libraries.assign(libs.begin(), libs.end());
  std::sort(out.links.begin(), out.links.end(), [](const auto& a, const auto& b) { return a.link < b.link; });
  return out;
}

}  // namespace nvdra::cdi
