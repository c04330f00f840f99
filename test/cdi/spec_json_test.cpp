#include "cdi/spec_json.hpp"

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

namespace nvdra::cdi {
namespace {

namespace json = boost::json;

// The spec's spec-level edits to change: a copy of them (they are shared, never changed in place).
ContainerEdits& edit(Spec& s) {
  auto copy = std::make_shared<ContainerEdits>(s.spec_edits());
  s.edits = copy;
  return *copy;
}

Spec plain_spec() {
  Spec s;
  s.kind = "k8s.gpu.nvidia.com/claim";
  s.devices.push_back(Device{"gpu-0", {}, {}});
  s.devices[0].edits.device_nodes.push_back(DeviceNode{.path = "/dev/nvidia0"});
  return s;
}

TEST(SpecJson, PlainSpecNeedsOnlyTheFloorVersion) { EXPECT_EQ(minimum_version(plain_spec()), "0.3.0"); }

TEST(SpecJson, MountTypeNeedsV040) {
  auto s = plain_spec();
  edit(s).mounts.push_back(Mount{"/a", "/b", "bind", {}});
  EXPECT_EQ(minimum_version(s), "0.4.0");
}

TEST(SpecJson, HostPathOnADeviceNodeNeedsV050) {
  auto s = plain_spec();
  s.devices[0].edits.device_nodes[0].host_path = "/run/nvidia/driver/dev/nvidia0";
  EXPECT_EQ(minimum_version(s), "0.5.0");
}

TEST(SpecJson, DeviceNameStartingWithADigitNeedsV050) {
  auto s = plain_spec();
  s.devices[0].name = "3b1f-gpu-0";
  EXPECT_EQ(minimum_version(s), "0.5.0");
}

TEST(SpecJson, AnnotationsOrADotInTheKindNameNeedV060) {
  auto s = plain_spec();
  s.devices[0].annotations["a"] = "b";
  EXPECT_EQ(minimum_version(s), "0.6.0");
  auto t = plain_spec();
  t.kind = "vendor.com/dotted.class";
  EXPECT_EQ(minimum_version(t), "0.6.0");
}

TEST(SpecJson, AdditionalGidsNeedV070) {
  auto s = plain_spec();
  edit(s).additional_gids.push_back(44);
  EXPECT_EQ(minimum_version(s), "0.7.0");
}

TEST(SpecJson, WritesCdiFieldNamesAndLeavesUnsetFieldsOut) {
  auto s = plain_spec();
  s.devices[0].edits.device_nodes.push_back(
      DeviceNode{"/dev/nvidia-caps/nvidia-cap30", std::nullopt, "c", 234, 30, 292, {}, {}, {}});
  edit(s).env.push_back("A=1");
  edit(s).hooks.push_back(Hook{"createContainer", "/usr/bin/hook", {"hook", "x"}, {}, std::nullopt});
  edit(s).mounts.push_back(Mount{"/h", "/c", {}, {"ro", "bind"}});
  auto v = json::parse(serialize(s)).as_object();
  EXPECT_EQ(v.at("cdiVersion"), "0.3.0");
  EXPECT_EQ(v.at("kind"), "k8s.gpu.nvidia.com/claim");
  const auto& nodes = v.at("devices").at(0).at("containerEdits").at("deviceNodes").as_array();
  EXPECT_EQ(nodes.at(0).as_object().size(), 1u) << "only path is set on the first node";
  const auto& cap = nodes.at(1).as_object();
  EXPECT_EQ(cap.at("type"), "c");
  EXPECT_EQ(cap.at("major"), 234);
  EXPECT_EQ(cap.at("minor"), 30);
  EXPECT_EQ(cap.at("fileMode"), 292);
  EXPECT_FALSE(cap.contains("hostPath"));
  const auto& edits = v.at("containerEdits").as_object();
  EXPECT_EQ(edits.at("env").at(0), "A=1");
  EXPECT_EQ(edits.at("hooks").at(0).at("hookName"), "createContainer");
  EXPECT_EQ(edits.at("mounts").at(0).at("options").at(1), "bind");
  EXPECT_FALSE(edits.at("mounts").at(0).as_object().contains("type"));
}

TEST(SpecJson, DeviceWithoutEditsStillCarriesTheRequiredContainerEdits) {
  Spec s;
  s.kind = "k8s.gpu.nvidia.com/device";
  s.devices.push_back(Device{"driver", {}, {}});
  auto v = json::parse(serialize(s)).as_object();
  EXPECT_TRUE(v.at("devices").at(0).as_object().contains("containerEdits"));
  EXPECT_FALSE(v.contains("containerEdits"));
}

// serialize() reuses the spec-level edits' text while they stay equal: the bytes are still the
// whole tree's, for the same edits twice and after they change (or go) on the same thread.
TEST(SpecJson, KeptSpecLevelEditsTextFollowsTheEdits) {
  auto whole = [](const Spec& s) { return json::serialize(to_json(s)) + "\n"; };
  auto s = plain_spec();
  edit(s).env.push_back("A=1");
  edit(s).mounts.push_back(Mount{"/h", "/c", {}, {"ro", "bind"}});
  EXPECT_EQ(serialize(s), whole(s));
  s.devices[0].name = "gpu-1";
  EXPECT_EQ(serialize(s), whole(s)) << "same edits, another device";
  edit(s).mounts[0].host_path = "/other";
  EXPECT_EQ(serialize(s), whole(s)) << "a changed mount";
  EXPECT_NE(serialize(s).find("/other"), std::string::npos);
  edit(s).hooks.push_back(Hook{"createContainer", "/usr/bin/hook", {"hook"}, {}, std::nullopt});
  EXPECT_EQ(serialize(s), whole(s)) << "a hook more";
  edit(s).env.push_back("B=\x01");  // the placeholder's character, in a value of the edits
  EXPECT_EQ(serialize(s), whole(s));
  s.edits = nullptr;
  EXPECT_EQ(serialize(s), whole(s)) << "no spec-level edits";
  EXPECT_EQ(serialize(s).find("\"containerEdits\":{\"env\""), std::string::npos);
  // Shared edits: the same object in two specs, then equal edits in another object.
  auto shared = std::make_shared<const ContainerEdits>(ContainerEdits{.env = {"C=3"}});
  s.edits = shared;
  const std::string first = serialize(s);
  EXPECT_EQ(first, whole(s));
  auto other = plain_spec();
  other.edits = shared;
  EXPECT_EQ(serialize(other), whole(other)) << "the same edits object";
  other.edits = std::make_shared<const ContainerEdits>(*shared);
  EXPECT_EQ(serialize(other), whole(other)) << "equal edits, another object";
  EXPECT_EQ(serialize(s), first);
}

TEST(SpecModel, AppendSkipsEntriesAlreadyPresent) {
  ContainerEdits a;
  a.env = {"A=1"};
  a.device_nodes = {DeviceNode{.path = "/dev/nvidia0"}};
  ContainerEdits b = a;
  b.env.push_back("B=2");
  b.mounts.push_back(Mount{"/h", "/c", {}, {}});
  a.append(b);
  EXPECT_EQ(a.env, (std::vector<std::string>{"A=1", "B=2"}));
  EXPECT_EQ(a.device_nodes.size(), 1u);
  EXPECT_EQ(a.mounts.size(), 1u);
  a.remove_common(b);
  EXPECT_TRUE(a.empty());
}

}  // namespace
}  // namespace nvdra::cdi
