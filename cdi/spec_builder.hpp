#pragma once
// Assembles validated, serialized specs: the per-claim transient spec, whose spec-level edits carry
// the driver's common edits as upstream's do, and a node-wide base spec (upstream's compute-domain
// "device_base") (upstream-driver.md §5). Pure; thread-safe.
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
// The same with spec-level edits shared with other specs (null: none).
Result<BuiltSpec> build_spec(std::string_view vendor, std::string_view cls, std::string file_name,
                             std::vector<NamedEdits> devices, SharedEdits common);

// The claim's transient spec: kind <vendor>/claim, devices "<claimUID>-<name>", file
// "<vendor>-claim_<claimUID>.yaml"; `common` (the driver's edits, NVIDIA_VISIBLE_DEVICES=void) at
// spec level, so each device id alone brings everything a container needs.
Result<BuiltSpec> build_claim_spec(std::string_view vendor, std::string_view claim_uid,
                                   std::vector<NamedEdits> devices, ContainerEdits common = {});
// The same with spec-level edits shared by every claim spec of the node (null: none).
Result<BuiltSpec> build_claim_spec(std::string_view vendor, std::string_view claim_uid,
                                   std::vector<NamedEdits> devices, SharedEdits common);

// The node-wide base spec: kind <vendor>/device, one device `device_name` with `device_edits`,
// the driver's edits at spec level; file "<vendor>-device_base.yaml". Written once and rewritten
// only when its content changes (SpecStore::write_if_changed).
Result<BuiltSpec> build_base_spec(std::string_view vendor, std::string_view device_name, ContainerEdits device_edits,
                                  ContainerEdits driver_edits);

inline constexpr std::string_view kComputeDomainBaseDevice = "all";  // upstream's CD base device

}  // namespace nvdra::cdi
