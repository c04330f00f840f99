#pragma once
// The kubelet DRA helper's device-metadata contract (KEP-5304, k8s.io/dynamic-resource-allocation
// kubeletplugin with EnableDeviceMetadata, Kubernetes 1.36+), which a plugin without that Go helper
// must fulfil itself: per claim and request, a JSON file of DeviceMetadata objects
// (metadata.resource.k8s.io/v1alpha1: {"kind","apiVersion","metadata":{name,namespace,uid,
// generation},"podClaimName"?,"requests":[{"name","devices":[{"name","driver","pool","attributes"}]}]})
// bind-mounted read-only into the containers at
//   /var/run/kubernetes.io/dra-device-attributes/resourceclaims/<claim>/<request>/<driver>-metadata.json
// or, for a claim made from a template, …/resourceclaimtemplates/<podClaimName>/<request>/… (the
// pod's name for the claim, annotation resource.kubernetes.io/pod-claim-name). The host file lives
// under the driver's plugin directory: <root>/<namespace>_<claim>/<request>/metadata.json.
// As the helper (kubeletplugin/metadata.go): a device allocated for a subrequest of a prioritized
// list ("main/sub") goes to the file of its top-level request ("main" in both paths); the document
// inside names the request as allocated ("requests":[{"name":"main/sub",…}]).
//
// How a prepare step (VFIO, gate DeviceMetadata) uses it: build MetadataDevice entries from the
// allocated devices' published attributes, call write_metadata_files() on the WorkerPool after the
// PrepareStarted commit, append the returned mounts to the claim's CDI spec-level edits (each device
// of the request sees its file), and call remove_metadata_files() at unprepare/rollback. Blocking
// (files, fsync); idempotent.
#include <boost/json/object.hpp>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "agent/base/device.hpp"
#include "agent/base/result.hpp"
#include "cdi/spec_model.hpp"

namespace nvdra::claims {

inline constexpr std::string_view kMetadataApiVersion = "metadata.resource.k8s.io/v1alpha1";
inline constexpr std::string_view kMetadataContainerRoot = "/var/run/kubernetes.io/dra-device-attributes";

struct MetadataClaim {
  std::string ns, name, uid;
  int64_t generation = 1;
  std::optional<std::string> pod_claim_name;  // set for claims made from a ResourceClaimTemplate
};

struct MetadataDevice {
  std::string request;  // as in the allocation result (may be "<main>/<sub>")
  std::string name, driver, pool;
  std::map<std::string, AttributeValue> attributes;
};

// One DeviceMetadata object for `request` (devices of other requests are left out).
boost::json::object metadata_document(const MetadataClaim& claim, const std::string& request,
                                      const std::vector<MetadataDevice>& devices);

// `request` as allocated; the paths use its top-level part ("main" of "main/sub").
std::string metadata_host_path(const std::string& root, const MetadataClaim& claim, const std::string& request);
std::string metadata_container_path(const std::string& driver, const MetadataClaim& claim, const std::string& request);

// Writes one file per top-level request of `devices` (temp file, fsync, rename) and returns its
// mounts. Two subrequests of one request (which no allocation makes) are refused, naming both.
Result<std::vector<cdi::Mount>> write_metadata_files(const std::string& root, const std::string& driver,
                                                    const MetadataClaim& claim,
                                                    const std::vector<MetadataDevice>& devices);
// Removes <root>/<namespace>_<claim>/ (missing is fine).
Status remove_metadata_files(const std::string& root, const MetadataClaim& claim);

}  // namespace nvdra::claims
