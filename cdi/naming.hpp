#pragma once
// CDI names used by the upstream kubelet plugins (upstream-driver.md §5) and CDI's naming rules
// (SPEC.md "Kind", "CDI Devices"; container-device-interface pkg/cdi GenerateTransientSpecName).
#include <string>
#include <string_view>

#include "agent/base/result.hpp"

namespace nvdra::cdi {

inline constexpr std::string_view kGpuVendor = "k8s.gpu.nvidia.com";
inline constexpr std::string_view kComputeDomainVendor = "k8s.compute-domain.nvidia.com";
inline constexpr std::string_view kClaimClass = "claim";
inline constexpr std::string_view kDeviceClass = "device";
// File extension nvdra writes: upstream's ".yaml", so that upstream's unprepare (after a rollback)
// removes nvdra's files. The content is JSON, which is valid YAML and what every CDI consumer
// parses. Removal also deletes the ".json" twin older nvdra versions wrote.
inline constexpr std::string_view kSpecExtension = ".yaml";
inline constexpr std::string_view kLegacySpecExtension = ".json";

// "<vendor>/<class>", e.g. "k8s.gpu.nvidia.com/claim".
std::string kind(std::string_view vendor, std::string_view cls);

// "<vendor>-<class>_<id>" with '/' in id replaced by '_' (no extension).
std::string transient_spec_name(std::string_view vendor, std::string_view cls, std::string_view id);

// The per-claim file: "k8s.gpu.nvidia.com-claim_<uid>.yaml".
std::string claim_spec_file(std::string_view vendor, std::string_view claim_uid);

// The CDI device name of one allocated device in a claim spec: "<claimUID>-<device>".
std::string claim_device_name(std::string_view claim_uid, std::string_view device);

// "<vendor>/<class>=<device>": the id kubelet hands to the runtime.
std::string qualified_device_id(std::string_view vendor, std::string_view cls, std::string_view device);

// Node-wide base specs older nvdra versions wrote ("k8s.gpu.nvidia.com-device_base.json"): the
// id "k8s.gpu.nvidia.com/device=driver" upstream does not know. Removed at start.
std::string legacy_gpu_base_spec_file();
inline constexpr std::string_view kLegacyGpuBaseDeviceId = "k8s.gpu.nvidia.com/device=driver";

// Checks CDI's rules; errors name the value and the allowed form.
Status validate_vendor(std::string_view vendor);
Status validate_class(std::string_view cls);
Status validate_device_name(std::string_view name);

}  // namespace nvdra::cdi
