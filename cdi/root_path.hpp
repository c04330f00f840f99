#pragma once
// Paths inside another root (a driver root mounted at /driver-root, a fake root in tests): joined
// and symlink-resolved as if the root were "/", so an absolute link target such as
// "/usr/lib/x86_64-linux-gnu/libcuda.so.1" stays inside the root. Blocking; thread-safe.
#include <optional>
#include <string>
#include <string_view>

namespace nvdra::cdi {

// root "/" + "/usr/bin" -> "/usr/bin"; "/driver-root" + "/usr/bin" -> "/driver-root/usr/bin".
std::string join_root(std::string_view root, std::string_view inner);

// The inner path with every symlink resolved inside the root, or nullopt if it does not exist,
// loops, or climbs above the root. `inner` must be absolute.
std::optional<std::string> resolve_in_root(std::string_view root, std::string_view inner);

// The link text of `inner` if it is a symlink.
std::optional<std::string> read_link_in_root(std::string_view root, std::string_view inner);

bool exists_in_root(std::string_view root, std::string_view inner);

}  // namespace nvdra::cdi
