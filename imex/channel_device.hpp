#pragma once
// The devices the compute-domain driver publishes (upstream-driver.md §2.5): channel-0 (type="channel",
// id=0) in both IMEX modes, daemon-0 (type="daemon", id=0) only in driver-managed mode (seed §7.1: no
// daemon device under HostManagedIMEX). The DeviceClasses compute-domain-default-channel.nvidia.com
// (type == "channel" && id == 0) and compute-domain-daemon.nvidia.com (type == "daemon") select them.
#include <string_view>

#include "agent/base/device.hpp"

namespace nvdra::imex {

inline constexpr unsigned kChannelId = 0;
inline constexpr std::string_view kChannelDevice = "channel-0";
inline constexpr std::string_view kChannelType = "channel";
inline constexpr std::string_view kDaemonType = "daemon";
inline constexpr std::string_view kDaemonDevice = "daemon-0";

PublishedDevice channel_device();
// The devices the driver publishes under HostManagedIMEX: channel-0 only.
DriverResources host_managed_resources();
PublishedDevice daemon_device();
// The devices of driver-managed mode, in upstream's slice order: channel-0, daemon-0.
DriverResources driver_managed_resources();

}  // namespace nvdra::imex
