#include "cdi/spec_builder.hpp"

#include <set>

#include "cdi/naming.hpp"
#include "cdi/spec_json.hpp"

namespace nvdra::cdi {

Result<BuiltSpec> build_spec(std::string_view vendor, std::string_view cls, std::string file_name,
                             std::vector<NamedEdits> devices, ContainerEdits common) {
  return build_spec(vendor, cls, std::move(file_name), std::move(devices),
                    std::make_shared<const ContainerEdits>(std::move(common)));
}

Result<BuiltSpec> build_spec(std::string_view vendor, std::string_view cls, std::string file_name,
                             std::vector<NamedEdits> devices, SharedEdits common) {
  if (auto s = validate_vendor(vendor); !s) return s.error();
  if (auto s = validate_class(cls); !s) return s.error();
  if (devices.empty())
    return make_error(ErrorCode::kInvalidArgument, "CDI spec " + file_name + " needs at least one device");
  BuiltSpec out;
  out.file_name = std::move(file_name);
  out.spec.kind = kind(vendor, cls);
  out.spec.edits = std::move(common);
  std::set<std::string> seen;
  for (auto& d : devices) {
    if (auto s = validate_device_name(d.name); !s) return s.error();
    if (!seen.insert(d.name).second)
      return make_error(ErrorCode::kInvalidArgument,
                        "CDI device name \"" + d.name + "\" appears twice in spec " + out.file_name);
    d.edits.remove_common(out.spec.spec_edits());
    out.device_ids.push_back(qualified_device_id(vendor, cls, d.name));
    out.spec.devices.push_back(Device{std::move(d.name), {}, std::move(d.edits)});
  }
  // CDI consumers reject a spec in which any device has no edits (podman 4.3: "invalid device,
  // empty device edits"), which would make every id of the spec unresolvable.
  for (const auto& d : out.spec.devices)
    if (d.edits.empty())
      return make_error(ErrorCode::kInvalidArgument, "CDI device \"" + d.name + "\" has no edits of its own (spec " +
                                                         out.file_name + "); CDI consumers reject such a spec");
  out.content = serialize(out.spec);
  return out;
}

Result<BuiltSpec> build_claim_spec(std::string_view vendor, std::string_view claim_uid,
                                   std::vector<NamedEdits> devices, ContainerEdits common) {
  return build_claim_spec(vendor, claim_uid, std::move(devices), std::make_shared<const ContainerEdits>(std::move(common)));
}

Result<BuiltSpec> build_claim_spec(std::string_view vendor, std::string_view claim_uid,
                                   std::vector<NamedEdits> devices, SharedEdits common) {
  if (claim_uid.empty() || claim_uid.find('/') != std::string_view::npos) {
    Error e = make_error(ErrorCode::kInvalidArgument,
                         "claim uid \"" + std::string(claim_uid) + "\" must be non-empty and contain no '/'");
    e.field = "uid";
    return e;
  }
  for (auto& d : devices) d.name = claim_device_name(claim_uid, d.name);
  auto built = build_spec(vendor, kClaimClass, claim_spec_file(vendor, claim_uid), std::move(devices),
                          std::move(common));
  if (!built) {
    Error e = built.error();
    e.claim = std::string(claim_uid);
    return e;
  }
  return built;
}

Result<BuiltSpec> build_base_spec(std::string_view vendor, std::string_view device_name, ContainerEdits device_edits,
                                  ContainerEdits driver_edits) {
  std::vector<NamedEdits> devices{NamedEdits{std::string(device_name), std::move(device_edits)}};
  return build_spec(vendor, kDeviceClass, transient_spec_name(vendor, kDeviceClass, "base") + std::string(kSpecExtension),
                    std::move(devices), std::move(driver_edits));
}

}  // namespace nvdra::cdi
