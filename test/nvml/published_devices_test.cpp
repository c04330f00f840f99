// Every device published for every shipped profile carries exactly upstream's names, attribute
// names, value types and capacities (upstream-driver.md §1.2, §2.1, §2.2).
#include "nvml/published_devices.hpp"

#include <gtest/gtest.h>

#include <regex>
#include <set>

#include "nvml/discovery.hpp"
#include "test/nvml/mock_nvml.hpp"

namespace nvdra::nvml {
namespace {

using testing::MockNvml;
enum class T { kString, kInt, kVersion };

// upstream-driver.md §2.1 (full GPU) and §2.2 (MIG): attribute -> value type, and whether optional.
struct Rule {
  T type;
  bool optional;
};
const std::map<std::string, Rule> kCommon = {
    {"type", {T::kString, false}},          {"uuid", {T::kString, false}},
    {"productName", {T::kString, false}},   {"brand", {T::kString, false}},
    {"architecture", {T::kString, false}},  {"cudaComputeCapability", {T::kVersion, false}},
    {"driverVersion", {T::kVersion, false}}, {"cudaDriverVersion", {T::kVersion, false}},
    {"addressingMode", {T::kString, true}}, {"resource.kubernetes.io/pciBusID", {T::kString, false}},
    {"resource.kubernetes.io/pcieRoot", {T::kString, true}}, {"resource.kubernetes.io/numaNode", {T::kInt, true}}};

bool has_type(const AttributeValue& v, T t) {
  switch (t) {
    case T::kString: return std::holds_alternative<std::string>(v);
    case T::kInt: return std::holds_alternative<int64_t>(v);
    case T::kVersion: return std::holds_alternative<SemVer>(v);
  }
  return false;
}

void check_device(const PublishedDevice& d) {
  static const std::regex gpu_name("^gpu-[0-9]+$");
  static const std::regex mig_name("^gpu-([0-9]+)-mig-(.+)-([0-9]+)-([0-9]+)$");
  static const std::regex bus("^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\\.[0-9a-f]$");
  static const std::regex version("^[0-9]+\\.[0-9]+\\.[0-9]+$");
  auto rules = kCommon;
  const bool mig = std::get<std::string>(d.attributes.at("type")) == "mig";
  if (mig) {
    rules["parentUUID"] = {T::kString, false};
    rules["profile"] = {T::kString, false};
  }
  EXPECT_TRUE(std::regex_match(d.name, mig ? mig_name : gpu_name)) << d.name;
  for (const auto& [name, rule] : rules) {
    auto it = d.attributes.find(name);
    if (it == d.attributes.end()) {
      EXPECT_TRUE(rule.optional) << d.name << " lacks " << name;
      continue;
    }
    EXPECT_TRUE(has_type(it->second, rule.type)) << d.name << " " << name;
    if (rule.type == T::kVersion) EXPECT_TRUE(std::regex_match(std::get<SemVer>(it->second).value, version)) << name;
  }
  for (const auto& [name, value] : d.attributes) EXPECT_TRUE(rules.count(name)) << d.name << " has extra attribute " << name;
  EXPECT_TRUE(std::regex_match(std::get<std::string>(d.attributes.at("resource.kubernetes.io/pciBusID")), bus));
  std::set<std::string> caps;
  for (const auto& [name, q] : d.capacity) {
    EXPECT_TRUE(std::regex_match(q, std::regex("^[0-9]+(Ki|Mi|Gi|Ti)?$"))) << name << "=" << q;
    caps.insert(name.rfind("memorySlice", 0) == 0 ? "memorySlice*" : name);
  }
  if (mig) {
    EXPECT_EQ(caps, (std::set<std::string>{"multiprocessors", "copyEngines", "decoders", "encoders", "jpegEngines",
                                           "ofaEngines", "memory", "memorySlice*"}));
  } else {
    EXPECT_EQ(caps, std::set<std::string>{"memory"});
  }
}

std::vector<PublishedDevice> publish(const std::string& profile) {
  MockNvml mock(profile);
  auto lib = mock.open();
  auto model = discover(*lib);
  if (!model) throw std::runtime_error(model.error().message);
  return published_gpu_devices(*model);
}

class PublishedDevicesPerProfile : public ::testing::TestWithParam<std::string> {};

TEST_P(PublishedDevicesPerProfile, EveryDeviceHasUpstreamNamesTypesAndCapacities) {
  const auto devices = publish(GetParam());
  ASSERT_FALSE(devices.empty());
  std::set<std::string> names;
  for (const auto& d : devices) {
    check_device(d);
    EXPECT_TRUE(names.insert(d.name).second) << "duplicate " << d.name;
  }
}

INSTANTIATE_TEST_SUITE_P(ShippedProfiles, PublishedDevicesPerProfile,
                         ::testing::Values("dgx-a100", "hgx-h100", "gb200-nvl", "l4"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n) c = (c == '-') ? '_' : c;
                           return n;
                         });

const PublishedDevice& find(const std::vector<PublishedDevice>& devices, const std::string& name) {
  for (const auto& d : devices)
    if (d.name == name) return d;
  throw std::runtime_error("no device " + name);
}

TEST(PublishedDevices, DgxA100PublishesSixGpusAndTheSevenStaticMigDevices) {
  const auto devices = publish("dgx-a100");
  EXPECT_EQ(devices.size(), 13u);
  EXPECT_THROW(find(devices, "gpu-6"), std::runtime_error);  // MIG-enabled GPUs publish only their MIG devices
  const auto& gpu = find(devices, "gpu-0");
  EXPECT_EQ(gpu.capacity.at("memory"), "40Gi");
  EXPECT_EQ(std::get<SemVer>(gpu.attributes.at("cudaComputeCapability")).value, "8.0.0");
  EXPECT_EQ(std::get<SemVer>(gpu.attributes.at("driverVersion")).value, "570.148.8");
  const auto& mig = find(devices, "gpu-6-mig-1g5gb-19-6");
  EXPECT_EQ(std::get<std::string>(mig.attributes.at("profile")), "1g.5gb");
  EXPECT_EQ(std::get<std::string>(mig.attributes.at("parentUUID")), "GPU-4a1f0c2e-7d3b-4e5a-9c81-0a2b3c4d5e07");
  EXPECT_EQ(std::get<std::string>(mig.attributes.at("resource.kubernetes.io/pciBusID")), "0000:b7:00.0");
  EXPECT_EQ(mig.capacity.at("memory"), "4864Mi");
  EXPECT_EQ(mig.capacity.at("multiprocessors"), "14");
  EXPECT_EQ(mig.capacity.at("memorySlice6"), "1");
  const auto& big = find(devices, "gpu-6-mig-3g20gb-9-0");
  for (int i = 0; i < 4; ++i) EXPECT_EQ(big.capacity.at("memorySlice" + std::to_string(i)), "1");
  EXPECT_EQ(big.capacity.count("memorySlice4"), 0u);
  find(devices, "gpu-7-mig-1g5gb-me-20-4");
  find(devices, "gpu-7-mig-1g10gb-15-6");
}

TEST(PublishedDevices, L4PublishesCoercedVersionsLikeUpstream) {
  const auto devices = publish("l4");
  ASSERT_EQ(devices.size(), 1u);
  const auto& d = devices[0];
  EXPECT_EQ(std::get<SemVer>(d.attributes.at("driverVersion")).value, "570.158.1");
  EXPECT_EQ(std::get<SemVer>(d.attributes.at("cudaDriverVersion")).value, "12.8.0");
  EXPECT_EQ(std::get<SemVer>(d.attributes.at("cudaComputeCapability")).value, "8.9.0");
  EXPECT_EQ(std::get<std::string>(d.attributes.at("architecture")), "Ada Lovelace");
  EXPECT_EQ(d.capacity.at("memory"), "23034Mi");
}

}  // namespace
}  // namespace nvdra::nvml
