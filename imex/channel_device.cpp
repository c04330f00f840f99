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

}  // namespace nvdra::imex
