// /proc/devices and /proc/driver/nvidia/capabilities/* text (cdi/nvidia_caps, imex/channel_major).
// Invariant: a device number read is one Linux can have (major 0..4095, minor 0..2^20-1).
#include <string>
#include <string_view>

#include "cdi/nvidia_caps.hpp"
#include "imex/channel_major.hpp"
#include "test/fuzz/fuzz_target.hpp"

NVDRA_FUZZ_TARGET(proc_devices) {
  const std::string_view text(reinterpret_cast<const char*>(data.data()), data.size());
  auto caps = nvdra::cdi::parse_char_device_major(text, "nvidia-caps");
  if (caps.ok()) NVDRA_FUZZ_CHECK(*caps >= 0 && *caps <= 4095);
  auto channels = nvdra::imex::parse_channel_major(text, "fuzz/proc/devices");
  if (channels.ok()) NVDRA_FUZZ_CHECK(*channels >= 0 && *channels <= 4095);
  auto cap = nvdra::cdi::parse_cap_access(text, "fuzz/capabilities/mig/config");
  if (cap.ok()) NVDRA_FUZZ_CHECK(cap->minor >= 0 && cap->minor < (1 << 20));
  return nvdra::fuzz::verdict(caps.ok() || channels.ok() || cap.ok());
}
