#include "agent/devices_command.hpp"

#include <boost/json/serialize.hpp>
#include <boost/json/value_from.hpp>

#include <variant>

#include "nvml/discovery.hpp"
#include "nvml/gpu_library.hpp"
#include "nvml/published_devices.hpp"
#include "nvml/upstream_names.hpp"

namespace nvdra {
namespace {

namespace json = boost::json;

json::object profile_json(const nvml::MigProfileInfo& p) {
  json::array placements;
  for (const auto& pl : p.placements) placements.push_back(json::object{{"start", pl.start}, {"size", pl.size}});
  return json::object{{"name", p.name},
                      {"profileIndex", p.gi_profile_index},
                      {"profileId", p.gi_profile_id},
                      {"ciProfileId", p.ci_profile_id},
                      {"sliceCount", p.slice_count},
                      {"instanceCount", p.instance_count},
                      {"memoryMiB", p.memory_mib},
                      {"multiprocessors", p.multiprocessors},
                      {"copyEngines", p.copy_engines},
                      {"decoders", p.decoders},
                      {"encoders", p.encoders},
                      {"jpegEngines", p.jpeg_engines},
                      {"ofaEngines", p.ofa_engines},
                      {"placements", std::move(placements)}};
}

json::object gpu_json(const nvml::GpuInfo& g) {
  json::object o{{"name", g.canonical_name()},
                 {"index", g.index},
                 {"minor", g.minor},
                 {"uuid", g.uuid},
                 {"productName", g.product_name},
                 {"brand", g.brand},
                 {"architecture", g.architecture},
                 {"cudaComputeCapability", std::to_string(g.cuda_cc_major) + "." + std::to_string(g.cuda_cc_minor)},
                 {"memoryBytes", g.memory_bytes},
                 {"pciBusId", g.pci.bus_id},
                 {"pciDeviceId", g.pci.device_id},
                 {"pciSubsystemId", g.pci.subsystem_id},
                 {"migCapable", g.mig_capable},
                 {"migEnabled", g.mig_enabled}};
  if (g.pcie_root) o["pcieRoot"] = *g.pcie_root;
  if (g.numa_node) o["numaNode"] = *g.numa_node;
  if (g.addressing_mode) o["addressingMode"] = *g.addressing_mode;
  if (g.fabric) {
    o["fabric"] = json::object{{"state", g.fabric->state},
                               {"status", g.fabric->status},
                               {"clusterUuid", g.fabric->cluster_uuid},
                               {"cliqueId", g.fabric->clique_id}};
  }
  json::array profiles, migs;
  for (const auto& p : g.mig_profiles) profiles.push_back(profile_json(p));
  for (const auto& m : g.mig_devices) {
    migs.push_back(json::object{{"name", m.canonical_name()},
                                {"uuid", m.uuid},
                                {"profile", m.profile.name},
                                {"profileId", m.profile.gi_profile_id},
                                {"giId", m.gi_id},
                                {"ciId", m.ci_id},
                                {"ciProfileId", m.ci_profile_id},
                                {"placement", json::object{{"start", m.placement.start}, {"size", m.placement.size}}}});
  }
  o["migProfiles"] = std::move(profiles);
  o["migDevices"] = std::move(migs);
  return o;
}

// resource.k8s.io's DeviceAttribute encoding: exactly one of string/int/bool/version.
json::value attribute_json(const AttributeValue& v) {
  return std::visit(
      [](const auto& x) -> json::value {
        using X = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<X, bool>) return json::object{{"bool", x}};
        else if constexpr (std::is_same_v<X, int64_t>) return json::object{{"int", x}};
        else if constexpr (std::is_same_v<X, std::string>) return json::object{{"string", x}};
        else if constexpr (std::is_same_v<X, SemVer>) return json::object{{"version", x.value}};
        else return json::object{{"ints", json::value_from(x)}};
      },
      v);
}

void print_table(const nvml::DeviceModel& m, std::FILE* out) {
  std::fprintf(out, "driver %s, CUDA %s, %zu GPU(s)\n", m.system.driver_version.c_str(),
               nvml::cuda_version(m.system.cuda_driver_version).c_str(), m.gpus.size());
  std::fprintf(out, "%-26s %-42s %-24s %-13s %-10s %s\n", "NAME", "UUID", "PRODUCT", "PCI BUS ID", "MEMORY", "MIG");
  for (const auto& g : m.gpus) {
    const char* mig = !g.mig_capable ? "n/a" : g.mig_enabled ? "enabled" : "disabled";
    std::fprintf(out, "%-26s %-42s %-24s %-13s %-10s %s\n", g.canonical_name().c_str(), g.uuid.c_str(),
                 g.product_name.c_str(), g.pci.bus_id.c_str(), nvml::binary_si(g.memory_bytes).c_str(), mig);
    for (const auto& d : g.mig_devices) {
      std::fprintf(out, "  %-24s %-42s %-24s %-13s %-10s GI %u CI %u\n", d.canonical_name().c_str(), d.uuid.c_str(),
                   d.profile.name.c_str(), "", nvml::binary_si(d.profile.memory_mib << 20).c_str(), d.gi_id, d.ci_id);
    }
  }
}

}  // namespace

json::value device_model_json(const nvml::DeviceModel& m) {
  json::array gpus, devices;
  for (const auto& g : m.gpus) gpus.push_back(gpu_json(g));
  for (const auto& d : nvml::published_gpu_devices(m)) {
    json::object attrs, caps;
    for (const auto& [k, v] : d.attributes) attrs[k] = attribute_json(v);
    for (const auto& [k, q] : d.capacity) caps[k] = json::object{{"value", q}};
    devices.push_back(json::object{{"name", d.name}, {"attributes", std::move(attrs)}, {"capacity", std::move(caps)}});
  }
  json::object o{{"driverVersion", m.system.driver_version},
                 {"cudaDriverVersion", m.system.cuda_driver_version},
                 {"gpus", std::move(gpus)},
                 {"driver", nvml::kGpuDriverName},
                 {"devices", std::move(devices)}};
  auto clique = nvml::clique_id(m);
  o["cliqueId"] = clique ? json::value(*clique) : json::value(nullptr);
  return o;
}

int run_devices_command(const config::Options& options, const std::string& format, std::FILE* out, std::FILE* err) {
  auto lib = nvml::open_nvml(nvml::LoadOptions{options.nvml_library, options.nvidia_driver_root});
  if (!lib) {
    std::fprintf(err, "nvdra-agent: devices: %s\n", lib.error().message.c_str());
    return 1;
  }
  const std::string host = options.host_root == "/" ? "" : options.host_root;
  auto model = nvml::discover(**lib, nvml::DiscoveryOptions{host + "/sys"});
  if (!model) {
    std::fprintf(err, "nvdra-agent: devices: %s\n", model.error().message.c_str());
    return 1;
  }
  if (format == "json") {
    std::fprintf(out, "%s\n", json::serialize(device_model_json(*model)).c_str());
  } else {
    print_table(*model, out);
  }
  return 0;
}

}  // namespace nvdra
