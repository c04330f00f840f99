#pragma once
// The one device the compute-domain driver publishes in HostManagedIMEX mode (seed §7.1): channel-0
// with attributes type="channel" and id=0, and no daemon device. The default DeviceClass
// compute-domain-default-channel.nvidia.com selects exactly this (type == "channel" && id == 0).
#include <string_view>

#include "agent/base/device.hpp"

namespace nvdra::imex {

inline constexpr unsigned kChannelId = 0;
inline constexpr std::string_view kChannelDevice = "channel-0";
inline constexpr std::string_view kChannelType = "channel";
inline constexpr std::string_view kDaemonType = "daemon";

PublishedDevice channel_device();
// The devices the driver publishes under HostManagedIMEX: channel-0 only.
DriverResources host_managed_resources();

}  // namespace nvdra::imex
