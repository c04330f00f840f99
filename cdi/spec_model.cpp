#include "cdi/spec_model.hpp"

#include <algorithm>

namespace nvdra::cdi {
namespace {

template <class T, class Same>
void append_unique(std::vector<T>& to, const std::vector<T>& from, Same same) {
  for (const auto& item : from) {
    bool present = std::any_of(to.begin(), to.end(), [&](const T& have) { return same(have, item); });
    if (!present) to.push_back(item);
  }
}

template <class T, class Same>
void erase_present(std::vector<T>& from, const std::vector<T>& common, Same same) {
  std::erase_if(from, [&](const T& item) {
    return std::any_of(common.begin(), common.end(), [&](const T& c) { return same(c, item); });
  });
}

// Two nodes or mounts at the same container path would fight in the container; the first wins.
constexpr auto same_node = [](const DeviceNode& a, const DeviceNode& b) { return a.path == b.path; };
constexpr auto same_mount = [](const Mount& a, const Mount& b) { return a.container_path == b.container_path; };
constexpr auto equal = [](const auto& a, const auto& b) { return a == b; };

}  // namespace

void ContainerEdits::append(const ContainerEdits& other) {
  append_unique(env, other.env, equal);
  append_unique(device_nodes, other.device_nodes, same_node);
  append_unique(mounts, other.mounts, same_mount);
  append_unique(hooks, other.hooks, equal);
  append_unique(additional_gids, other.additional_gids, equal);
}

void ContainerEdits::remove_common(const ContainerEdits& common) {
  erase_present(env, common.env, equal);
  erase_present(device_nodes, common.device_nodes, equal);
  erase_present(mounts, common.mounts, equal);
  erase_present(hooks, common.hooks, equal);
  erase_present(additional_gids, common.additional_gids, equal);
}

}  // namespace nvdra::cdi
