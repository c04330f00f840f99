#pragma once
// Assembles validated, serialized specs: the per-claim transient spec and the node-wide base spec
// that carries the driver's common edits (upstream-driver.md §5). Pure; thread-safe.
#include <string>
#include <string_view>
#include <vector>

#include "agent/base/result.hpp"
#include "cdi/spec_model.hpp"

namespace nvdra::cdi {

struct NamedEdits {
  std::string name;  // for a claim: the published device name ("gpu-0", "channel-0")
  ContainerEdits edits;
};

struct BuiltSpec {
  Spec spec;
  std::string file_name;                // inside --cdi-root
  std::vector<std::string> device_ids;  // qualified CDI ids, one per device, in input order
  std::string content;                  // the file's bytes
};

// Any spec. Device-level edits that `common` already carries are dropped from the devices.
// Errors name the vendor/class/device and CDI's rules; duplicate device names are refused.
Result<BuiltSpec> build_spec(std::string_view vendor, std::string_view cls, std::string file_name,
                             std::vector<NamedEdits> devices, ContainerEdits common);

// The claim's transient spec: kind <vendor>/claim, devices "<claimUID>-<name>", file
// "<vendor>-claim_<claimUID>.json". `common` is usually empty: the driver's edits live in the
// base spec, whose device id (its BuiltSpec::device_ids[0]) the caller returns beside each device id.
Result<BuiltSpec> build_claim_spec(std::string_view vendor, std::string_view claim_uid,
                                   std::vector<NamedEdits> devices, ContainerEdits common = {});

// The node-wide base spec: kind <vendor>/device, one device `device_name` with `device_edits`,
// the driver's edits at spec level; file "<vendor>-device_base.json". Written once and rewritten
// only when its content changes (SpecStore::write_if_changed).
Result<BuiltSpec> build_base_spec(std::string_view vendor, std::string_view device_name, ContainerEdits device_edits,
                                  ContainerEdits driver_edits);

inline constexpr std::string_view kGpuBaseDevice = "driver";        // k8s.gpu.nvidia.com/device=driver
inline constexpr std::string_view kComputeDomainBaseDevice = "all";  // upstream's CD base device

}  // namespace nvdra::cdi
