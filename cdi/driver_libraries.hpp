#pragma once
// The library half of driver discovery: candidates from the root's ld.so.cache and library
// directories, libcuda and the driver version, the *.so.<version> files and the links to them.
#include <string>
#include <vector>

#include "agent/base/result.hpp"
#include "cdi/driver_discovery.hpp"

namespace nvdra::cdi {

// Library directories searched under a driver root (nvidia-container-toolkit's list, upstream
// root.go): after the root's ld.so.cache.
const std::vector<std::string>& library_search_dirs();

struct LibraryCandidate {
  std::string name;  // file name or cache key
  std::string path;  // inside the root
};

// Cache entries of this machine's architecture first, then files in the search directories.
std::vector<LibraryCandidate> library_candidates(const std::string& root);

struct DriverLibraries {
  std::string version;
  std::string libcuda;
  std::string libcuda_link;  // the libcuda.so.1 path it was found by
  std::vector<std::string> libraries;
  std::vector<DriverLink> links;
};

Result<DriverLibraries> discover_libraries(const std::string& root);

}  // namespace nvdra::cdi
