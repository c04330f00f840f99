#pragma once
// The ComputeDomain (resource.nvidia.com/v1beta1) as the controller role needs it, and the workload
// ResourceClaimTemplate rendered from it exactly as upstream's controller renders it
// (../shared/reference/upstream-driver.md §9.3, §9.5). Pure functions: no I/O.
#include <string>
#include <string_view>
#include <vector>

#include "agent/base/result.hpp"

namespace nvdra::controller {

// Upstream reuses one string as ComputeDomain finalizer, RCT finalizer and RCT label key.
inline constexpr const char* kComputeDomainFinalizer = "resource.nvidia.com/computeDomain";
inline constexpr const char* kComputeDomainLabel = "resource.nvidia.com/computeDomain";
inline constexpr const char* kComputeDomainTargetLabel = "resource.nvidia.com/computeDomainTarget";
inline constexpr const char* kDefaultChannelDeviceClass = "compute-domain-default-channel.nvidia.com";
inline constexpr const char* kComputeDomainDriver = "compute-domain.nvidia.com";

struct ComputeDomain {
  std::string name;
  std::string ns;
  std::string uid;
  std::string resource_version;
  std::vector<std::string> finalizers;
  bool deleting = false;            // metadata.deletionTimestamp is set
  std::string rct_name;             // spec.channel.resourceClaimTemplate.name
  std::string allocation_mode;      // spec.channel.allocationMode ("" when absent)
  std::string status;               // status.status ("" when absent)

  bool has_finalizer() const;
  std::string describe() const { return "ComputeDomain " + ns + "/" + name + " (" + uid + ")"; }
};

Result<ComputeDomain> decode_compute_domain(std::string_view json);

// The workload ResourceClaimTemplate of `cd`: in its namespace, named by spec.channel, with the
// finalizer and the computeDomain/computeDomainTarget=Workload labels, one "channel" request of the
// default channel DeviceClass and the ComputeDomainChannelConfig (domainID = the CD's UID,
// allocationMode as the CD gives it, absent when the CD leaves it empty).
std::string render_workload_rct(const ComputeDomain& cd);

// What the controller reads back from an RCT: its owner label and whether it is being deleted.
struct ClaimTemplate {
  std::string uid;
  std::string resource_version;
  std::string owner;  // the computeDomain label
  std::vector<std::string> finalizers;
  bool deleting = false;
};
Result<ClaimTemplate> decode_claim_template(std::string_view json);

// Read-modify-write of a stored object (every field it has is kept): `finalizer` added or removed.
Result<std::string> with_finalizer(std::string_view object_json, std::string_view finalizer, bool present);
// status.status set to `value` (the rest of status kept).
Result<std::string> with_status(std::string_view object_json, std::string_view value);

}  // namespace nvdra::controller
