#include "imex/channel_device.hpp"

#include <string>

namespace nvdra::imex {

PublishedDevice channel_device() {
  PublishedDevice d;
  d.name = std::string(kChannelDevice);
  d.attributes["type"] = std::string(kChannelType);
  d.attributes["id"] = int64_t{kChannelId};
  return d;
}

DriverResources host_managed_resources() { return DriverResources{{channel_device()}, {}}; }

PublishedDevice daemon_device() {
  PublishedDevice d;
  d.name = std::string(kDaemonDevice);
  d.attributes["type"] = std::string(kDaemonType);
  d.attributes["id"] = int64_t{0};
  return d;
}

DriverResources driver_managed_resources() { return DriverResources{{channel_device(), daemon_device()}, {}}; }

}  // namespace nvdra::imex
