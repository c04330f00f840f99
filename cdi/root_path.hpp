#pragma once
// Paths inside another root (a driver root mounted at /driver-root, a fake root in tests): joined
// and symlink-resolved as if the root were "/", so an absolute link target such as
// "/usr/lib/x86_64-linux-gnu/libcuda.so.1" stays inside the root. Blocking; thread-safe.
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace nvdra::cdi {

// root "/" + "/usr/bin" -> "/usr/bin"; "/driver-root" + "/usr/bin" -> "/driver-root/usr/bin".
std::string join_root(std::string_view root, std::string_view inner);

// The inner path with every symlink resolved inside the root, or nullopt if it does not exist,
// loops, or climbs above the root. `inner` must be absolute.
std::optional<std::string> resolve_in_root(std::string_view root, std::string_view inner);

// resolve_in_root for many paths of one root: every directory entry it looked at is remembered, so
// a walk of a driver root lstats each directory once instead of once per file under it (the
// libraries of a host root are thousands of files in a handful of directories). A snapshot: what
// changes under the root after it was looked at is not seen, so make one per walk. Not thread-safe.
class RootResolver {
 public:
  explicit RootResolver(std::string root) : root_(std::move(root)) {}

  std::optional<std::string> resolve(std::string_view inner);
  bool exists(std::string_view inner) { return resolve(inner).has_value(); }
  // The link text of `inner` when its last component is a symlink (its directory resolved first).
  std::optional<std::string> link_text(std::string_view inner);
  const std::string& root() const { return root_; }

 private:
  struct Entry {
    std::optional<std::string> resolved;  // the entry with its links followed; nullopt: missing
    std::optional<std::string> link;      // its link text when it is a symlink
  };
  std::optional<std::string> walk(std::string dir, std::string_view inner, int& links);
  const Entry* last_entry(std::string_view dir, std::string_view name, int& links);  // nullptr: no such dir
  const Entry& entry(const std::string& dir, std::string_view name, int& links);

  std::string root_;
  std::unordered_map<std::string, Entry> entries_;  // by resolved directory + "/" + name
  std::unordered_map<std::string, std::optional<std::string>> dirs_;  // a path's directory as asked -> resolved
  bool out_of_links_ = false;                      // this resolve ran out: remember nothing it found
};

}  // namespace nvdra::cdi
