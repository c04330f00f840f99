#include "k8s/taint_rules.hpp"

#include <algorithm>

namespace nvdra::k8s {

void fit_taints(PublishedDevice& device, CounterLayout layout) {
  const bool v134 = layout == CounterLayout::kWithConsumers;
  if (v134) std::erase_if(device.taints, [](const DeviceTaint& t) { return t.effect == "None"; });
  const std::size_t cap = v134 ? kMaxTaintsPerDevice134 : kMaxTaintsPerDevice;
  // NoSchedule/NoExecute first: if any must go, the ones that keep pods away stay.
  std::stable_partition(device.taints.begin(), device.taints.end(),
                        [](const DeviceTaint& t) { return t.effect != "None"; });
  if (device.taints.size() > cap) device.taints.resize(cap);
}

}  // namespace nvdra::k8s
