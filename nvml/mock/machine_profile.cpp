#include "nvml/mock/machine_profile.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <string_view>

#include "nvml/mock/mig_layout.hpp"

namespace nvdra::nvml::mock {
namespace {

// Thrown inside the parser only; parse_profile turns it into an Error.
struct ProfileError {
  std::string field;
  std::string message;
  int line = -1;
};

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

int line_of(const YAML::Node& n) { return n.Mark().line >= 0 ? n.Mark().line + 1 : -1; }

[[noreturn]] void fail(const std::string& field, const YAML::Node& at, std::string message) {
  throw ProfileError{field, std::move(message), line_of(at)};
}

template <class T>
T scalar(const YAML::Node& map, const char* key, const std::string& field, const char* what) {
  const YAML::Node n = map[key];
  if (!n.IsScalar()) fail(field, n.IsDefined() ? n : map, std::string("must be ") + what);
  try {
    return n.as<T>();
  } catch (const YAML::Exception&) {
    fail(field, n, "'" + n.Scalar() + "' is not " + what);
  }
}

void check_keys(const YAML::Node& map, const std::string& where, const std::set<std::string>& allowed) {
  for (const auto& kv : map) {
    const auto key = kv.first.Scalar();
    if (!allowed.count(key)) {
      fail(where.empty() ? key : where + "." + key, kv.first,
           "unknown field (allowed: " + join(std::vector<std::string>(allowed.begin(), allowed.end())) + ")");
    }
  }
}

// Hand-written checks, not std::regex: compiling the profile's four patterns was 3.2 M of the
// 6.2 M instructions the mock's nvmlInit took, paid by every agent start of every test.
bool is_hex(char c, bool lower_only) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (!lower_only && c >= 'A' && c <= 'F');
}

// 8-4-4-4-12 hex digits.
bool is_uuid_text(std::string_view s, bool lower_only) {
  if (s.size() != 36) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash ? s[i] != '-' : !is_hex(s[i], lower_only)) return false;
  }
  return true;
}

// "<4-8 hex>:<2 hex>:<2 hex>.<0-7>" into its four numbers.
bool parse_pci_text(std::string_view s, unsigned* domain, unsigned* bus, unsigned* device, unsigned* function) {
  const auto colon = s.find(':');
  if (colon < 4 || colon > 8 || s.size() != colon + 8 || s[colon + 3] != ':' || s[colon + 6] != '.') return false;
  for (size_t i = 0; i < s.size(); ++i)
    if (i != colon && i != colon + 3 && i != colon + 6 && !is_hex(s[i], false)) return false;
  if (s.back() < '0' || s.back() > '7') return false;
  const std::string text(s);
  *domain = static_cast<unsigned>(std::stoul(text.substr(0, colon), nullptr, 16));
  *bus = static_cast<unsigned>(std::stoul(text.substr(colon + 1, 2), nullptr, 16));
  *device = static_cast<unsigned>(std::stoul(text.substr(colon + 4, 2), nullptr, 16));
  *function = static_cast<unsigned>(s.back() - '0');
  return true;
}

// Two or three dot-separated runs of digits, like 570.148.08.
bool is_driver_version(std::string_view s) {
  size_t parts = 0;
  for (size_t start = 0; start <= s.size(); ++parts) {
    const size_t end = std::min(s.find('.', start), s.size());
    if (end == start) return false;
    for (size_t i = start; i < end; ++i)
      if (s[i] < '0' || s[i] > '9') return false;
    start = end + 1;
  }
  return parts == 2 || parts == 3;
}

bool parse_uuid_bytes(const std::string& s, std::array<unsigned char, 16>* out) {
  if (!is_uuid_text(s, false)) return false;
  std::string hex;
  for (char c : s)
    if (c != '-') hex += c;
  for (size_t i = 0; i < 16; ++i) (*out)[i] = static_cast<unsigned char>(std::stoul(hex.substr(2 * i, 2), nullptr, 16));
  return true;
}

FabricSpec parse_fabric(const YAML::Node& n, const std::string& field) {
  if (!n.IsMap()) fail(field, n, "must be a mapping with clusterUuid, cliqueId, state, status");
  check_keys(n, field, {"clusterUuid", "cliqueId", "state", "status", "healthMask", "healthSummary"});
  FabricSpec f;
  const auto uuid = scalar<std::string>(n, "clusterUuid", field + ".clusterUuid", "a UUID (8-4-4-4-12 hex)");
  if (!parse_uuid_bytes(uuid, &f.cluster_uuid))
    fail(field + ".clusterUuid", n["clusterUuid"], "'" + uuid + "' is not a UUID (8-4-4-4-12 hex)");
  f.clique_id = scalar<unsigned>(n, "cliqueId", field + ".cliqueId", "an unsigned integer");
  if (n["state"]) {
    static const std::vector<std::string> states = {"notSupported", "notStarted", "inProgress", "completed"};
    const auto s = scalar<std::string>(n, "state", field + ".state", "a fabric state");
    auto it = std::find(states.begin(), states.end(), s);
    if (it == states.end()) fail(field + ".state", n["state"], "'" + s + "' is not one of " + join(states));
    f.state = static_cast<unsigned>(it - states.begin());
  }
  if (n["status"]) f.status = scalar<unsigned>(n, "status", field + ".status", "an nvmlReturn_t number");
  if (n["healthMask"]) f.health_mask = scalar<unsigned>(n, "healthMask", field + ".healthMask", "an unsigned integer");
  if (n["healthSummary"])
    f.health_summary = scalar<unsigned>(n, "healthSummary", field + ".healthSummary", "0, 1, 2 or 3");
  return f;
}

void parse_pci(const YAML::Node& gpu, const std::string& field, GpuSpec* out) {
  const auto s = scalar<std::string>(gpu, "pciBusId", field, "a PCI bus ID like 00000000:07:00.0");
  if (!parse_pci_text(s, &out->domain, &out->bus, &out->device, &out->function))
    fail(field, gpu["pciBusId"], "'" + s + "' is not a PCI bus ID like 00000000:07:00.0");
}

void parse_mig(const YAML::Node& gpu, const std::string& where, GpuSpec* out) {
  const ProductSpec& product = *out->product;
  if (gpu["migMode"]) {
    const auto mode = scalar<std::string>(gpu, "migMode", where + ".migMode", "enabled or disabled");
    if (mode != "enabled" && mode != "disabled")
      fail(where + ".migMode", gpu["migMode"], "'" + mode + "' is not one of enabled, disabled");
    if (!product.mig_capable && mode == "enabled")
      fail(where + ".migMode", gpu["migMode"], product.name + " is not MIG capable (allowed: disabled)");
    out->mig_enabled = mode == "enabled";
  }
  if (gpu["migResetRequired"])
    out->mig_reset_required = scalar<bool>(gpu, "migResetRequired", where + ".migResetRequired", "true or false");
  const YAML::Node devs = gpu["migDevices"];
  if (!devs) return;
  if (!out->mig_enabled) fail(where + ".migDevices", devs, "needs migMode: enabled");
  if (!devs.IsSequence()) fail(where + ".migDevices", devs, "must be a list of {profile, placement}");
  std::vector<GiRecord> placed;
  std::vector<std::string> names;
  for (const auto& p : product.gi_profiles) names.push_back(p.name);
  for (size_t i = 0; i < devs.size(); ++i) {
    const std::string f = where + ".migDevices[" + std::to_string(i) + "]";
    const YAML::Node d = devs[i];
    if (!d.IsMap()) fail(f, d, "must be a mapping {profile, placement}");
    check_keys(d, f, {"profile", "placement"});
    const auto name = scalar<std::string>(d, "profile", f + ".profile", "a MIG profile name");
    const GiProfileSpec* prof = product.profile_by_name(name);
    if (prof == nullptr)
      fail(f + ".profile", d["profile"], "'" + name + "' is not a MIG profile of " + product.name + " (allowed: " +
                                             join(names) + ")");
    const auto start = scalar<unsigned>(d, "placement", f + ".placement", "a memory-slice index");
    std::string why;
    if (check_gi_placement(product, placed, prof->id, start, &why) != NVML_SUCCESS) fail(f + ".placement", d, why);
    placed.push_back(GiRecord{next_gi_id(placed, *prof), prof->id, start, prof->placement_size});
    out->mig_devices.push_back(MigDeviceSpec{prof->id, start});
  }
}

GpuSpec parse_gpu(const YAML::Node& gpu, size_t index, std::string* label) {
  std::string where = "gpus[" + std::to_string(index) + "]";
  *label = where;
  if (!gpu.IsMap()) fail("", gpu, "must be a mapping");
  check_keys(gpu, "", {"product", "uuid", "pciBusId", "minor", "numaNode", "moduleId", "serial", "virtualizationMode",
                       "migMode", "migResetRequired", "migDevices", "fabric"});
  GpuSpec out;
  if (gpu["uuid"]) {
    out.uuid = scalar<std::string>(gpu, "uuid", "uuid", "a GPU UUID");
    *label = where + " (" + out.uuid + ")";
  }
  if (out.uuid.rfind("GPU-", 0) != 0 || !is_uuid_text(std::string_view(out.uuid).substr(4), true))
    fail("uuid", gpu["uuid"] ? gpu["uuid"] : gpu, "'" + out.uuid + "' is not GPU-<8-4-4-4-12 lower-case hex>");
  const auto product = scalar<std::string>(gpu, "product", "product", "a product name");
  out.product = find_product(product);
  if (out.product == nullptr) fail("product", gpu["product"], "unknown product '" + product + "' (allowed: " + join(product_names()) + ")");
  parse_pci(gpu, "pciBusId", &out);
  out.minor = gpu["minor"] ? scalar<unsigned>(gpu, "minor", "minor", "an unsigned integer") : static_cast<unsigned>(index);
  if (gpu["numaNode"]) out.numa_node = scalar<unsigned>(gpu, "numaNode", "numaNode", "an unsigned integer");
  if (gpu["moduleId"]) out.module_id = scalar<unsigned>(gpu, "moduleId", "moduleId", "an unsigned integer");
  out.serial = gpu["serial"] ? scalar<std::string>(gpu, "serial", "serial", "a string")
                             : std::to_string(1650000000000ULL + out.minor);
  if (gpu["virtualizationMode"]) {
    static const std::vector<std::string> modes = {"none", "passthrough", "vgpu"};
    const auto m = scalar<std::string>(gpu, "virtualizationMode", "virtualizationMode", "a mode");
    auto it = std::find(modes.begin(), modes.end(), m);
    if (it == modes.end()) fail("virtualizationMode", gpu["virtualizationMode"], "'" + m + "' is not one of " + join(modes));
    out.virtualization_mode = static_cast<unsigned>(it - modes.begin());
  }
  parse_mig(gpu, "", &out);
  if (gpu["fabric"]) {
    if (!out.product->fabric_capable)
      fail("fabric", gpu["fabric"], out.product->name + " has no NVLink fabric (fabric queries are NOT_SUPPORTED)");
    out.fabric = parse_fabric(gpu["fabric"], "fabric");
  } else if (out.product->fabric_capable) {
    out.fabric = FabricSpec{};  // NVSwitch node, not in a multi-node clique: zero cluster UUID
  }
  return out;
}

std::string strip_dot(std::string s) { return (!s.empty() && s[0] == '.') ? s.substr(1) : s; }

}  // namespace

Result<MachineProfile> parse_profile(std::string_view text, const std::string& path) {
  MachineProfile profile;
  profile.path = path;
  profile.fingerprint = std::to_string(std::hash<std::string_view>{}(text));
  std::string gpu_label, gpu_path;
  try {
    YAML::Node root = YAML::Load(std::string(text));
    if (!root.IsMap()) fail("", root, "must be a mapping with driverVersion, cudaDriverVersion, gpus");
    // fabricManager belongs to the mock libnvfm.so.1 (fm/mock/fm_machine.hpp); nvswitches to nvdra-fake-node,
    // which lays out that many /proc/driver/nvidia-nvswitch/devices entries.
    check_keys(root, "", {"driverVersion", "cudaDriverVersion", "gpus", "nvswitches", "fabricManager"});
    profile.driver_version = scalar<std::string>(root, "driverVersion", "driverVersion", "a driver version like 570.148.08");
    if (!is_driver_version(profile.driver_version))
      fail("driverVersion", root["driverVersion"], "'" + profile.driver_version + "' is not a version like 570.148.08");
    profile.cuda_driver_version = scalar<int>(root, "cudaDriverVersion", "cudaDriverVersion", "an integer like 12080");
    if (profile.cuda_driver_version < 1000)
      fail("cudaDriverVersion", root["cudaDriverVersion"], "must be major*1000 + minor*10, like 12080");
    const YAML::Node gpus = root["gpus"];
    if (!gpus.IsSequence() || gpus.size() == 0) fail("gpus", gpus.IsDefined() ? gpus : root, "must be a non-empty list");
    std::set<std::string> uuids, buses;
    std::set<unsigned> minors;
    for (size_t i = 0; i < gpus.size(); ++i) {
      gpu_path = "gpus[" + std::to_string(i) + "].";
      GpuSpec g = parse_gpu(gpus[i], i, &gpu_label);
      char bus[32];
      std::snprintf(bus, sizeof bus, "%08X:%02X:%02X.%X", g.domain, g.bus, g.device, g.function);
      if (!uuids.insert(g.uuid).second) fail("uuid", gpus[i]["uuid"], "duplicate GPU UUID " + g.uuid);
      if (!buses.insert(bus).second) fail("pciBusId", gpus[i]["pciBusId"], std::string("duplicate PCI bus ID ") + bus);
      if (!minors.insert(g.minor).second) fail("minor", gpus[i], "duplicate minor number " + std::to_string(g.minor));
      profile.gpus.push_back(std::move(g));
    }
  } catch (const ProfileError& e) {
    std::string msg = "profile " + path;
    if (e.line > 0) msg += ":" + std::to_string(e.line);
    if (!gpu_label.empty()) msg += ": GPU " + gpu_label;
    if (!e.field.empty()) msg += ": field " + strip_dot(e.field);
    msg += ": " + e.message;
    Error err = make_error(ErrorCode::kInvalidArgument, msg);
    err.field = gpu_path + strip_dot(e.field);
    return err;
  } catch (const YAML::Exception& e) {
    return make_error(ErrorCode::kInvalidArgument, "profile " + path + ":" + std::to_string(e.mark.line + 1) +
                                                       ": bad YAML: " + e.msg);
  }
  return profile;
}

Result<MachineProfile> load_profile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return make_error(ErrorCode::kNotFound, "profile " + path + ": cannot be read");
  std::stringstream text;
  text << in.rdbuf();
  return parse_profile(text.str(), path);
}

std::string resolve_profile_path(std::string_view value, std::string_view profiles_dir) {
  const std::string v(value);
  const bool is_path = v.find('/') != std::string::npos ||
                       (v.size() > 5 && v.compare(v.size() - 5, 5, ".yaml") == 0);
  if (is_path) return v;
  return std::string(profiles_dir) + "/" + v + ".yaml";
}

}  // namespace nvdra::nvml::mock
