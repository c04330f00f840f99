#pragma once
// The library half of driver discovery: candidates from the root's ld.so.cache and library
// directories, libcuda and the driver version, the *.so.<version> files and the links to them.
#include <string>
#include <vector>

#include "agent/base/result.hpp"
#include "cdi/driver_discovery.hpp"
#include "cdi/root_path.hpp"

namespace nvdra::cdi {

// Library directories searched under a driver root (nvidia-container-toolkit's list, upstream
// root.go): after the root's ld.so.cache.
const std::vector<std::string>& library_search_dirs();

struct LibraryCandidate {
  std::string name;  // file name or cache key
  std::string path;  // inside the root
};

// Cache entries of this machine's architecture first, then files in the search directories (each
// directory once, however many of the names lead to it).
std::vector<LibraryCandidate> library_candidates(RootResolver& resolver);

struct DriverLibraries {
  std::string version;
  std::string libcuda;
  std::string libcuda_link;  // the libcuda.so.1 path it was found by
  std::vector<std::string> libraries;
  std::vector<DriverLink> links;
};

// Every path resolved through `resolver`, whose root is the driver root.
Result<DriverLibraries> discover_libraries(RootResolver& resolver);

}  // namespace nvdra::cdi
