// The device-metadata files of KEP-5304 (metadata_files.hpp): document shape, paths, files on disk.
#include "agent/claims/claim/metadata_files.hpp"

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

namespace nvdra::claims {
namespace {
namespace fs = std::filesystem;

std::vector<MetadataDevice> vfio_devices() {
  MetadataDevice d{"vm", "gpu-vfio-0", "gpu.nvidia.com", "node-a", {}};
  d.attributes["type"] = std::string("vfio");
  d.attributes["resource.kubernetes.io/pciBusID"] = std::string("0000:65:00.0");
  d.attributes["iommuFDEnabled"] = true;
  MetadataDevice other{"other", "gpu-vfio-1", "gpu.nvidia.com", "node-a", {}};
  return {d, other};
}

TEST(MetadataFiles, DocumentHasTheV1alpha1Shape) {
  MetadataClaim claim{"default", "vm-claim", "uid-1", 1, std::nullopt};
  const auto doc = boost::json::serialize(metadata_document(claim, "vm", vfio_devices()));
  EXPECT_EQ(doc,
            R"({"kind":"DeviceMetadata","apiVersion":"metadata.resource.k8s.io/v1alpha1",)"
            R"("metadata":{"name":"vm-claim","namespace":"default","uid":"uid-1","generation":1},)"
            R"("requests":[{"name":"vm","devices":[{"name":"gpu-vfio-0","driver":"gpu.nvidia.com","pool":"node-a",)"
            R"("attributes":{"iommuFDEnabled":{"bool":true},"resource.kubernetes.io/pciBusID":{"string":"0000:65:00.0"},)"
            R"("type":{"string":"vfio"}}}]}]})");
}

TEST(MetadataFiles, ContainerPathsForClaimsAndTemplates) {
  MetadataClaim direct{"default", "vm-claim", "uid-1", 1, std::nullopt};
  EXPECT_EQ(metadata_container_path("gpu.nvidia.com", direct, "vm"),
            "/var/run/kubernetes.io/dra-device-attributes/resourceclaims/vm-claim/vm/gpu.nvidia.com-metadata.json");
  MetadataClaim from_template{"default", "pod-1-gpu-x7k2p", "uid-2", 1, std::string("my-gpu")};
  EXPECT_EQ(metadata_container_path("gpu.nvidia.com", from_template, "vm"),
            "/var/run/kubernetes.io/dra-device-attributes/resourceclaimtemplates/my-gpu/vm/gpu.nvidia.com-metadata.json");
  auto doc = metadata_document(from_template, "vm", {});
  EXPECT_EQ(doc.at("podClaimName"), "my-gpu");
}

TEST(MetadataFiles, WrittenPerRequestAndRemovedWithTheClaim) {
  const auto root = fs::temp_directory_path() / ("nvdra-metadata-" + std::to_string(::getpid()));
  fs::remove_all(root);
  MetadataClaim claim{"default", "vm-claim", "uid-1", 1, std::nullopt};
  auto mounts = write_metadata_files(root.string(), "gpu.nvidia.com", claim, vfio_devices());
  ASSERT_TRUE(mounts) << mounts.error().describe();
  ASSERT_EQ(mounts->size(), 2u);  // requests "other" and "vm"
  const auto& vm = (*mounts)[1];
  EXPECT_EQ(vm.host_path, (root / "default_vm-claim" / "vm" / "metadata.json").string());
  EXPECT_EQ(vm.container_path,
            "/var/run/kubernetes.io/dra-device-attributes/resourceclaims/vm-claim/vm/gpu.nvidia.com-metadata.json");
  EXPECT_EQ(vm.options, (std::vector<std::string>{"ro", "bind"}));
  std::ifstream in(vm.host_path);
  std::stringstream text;
  text << in.rdbuf();
  auto parsed = boost::json::parse(text.str());
  EXPECT_EQ(parsed.at("requests").at(0).at("devices").at(0).at("name"), "gpu-vfio-0");
  // Again: same content, no stray temp files.
  ASSERT_TRUE(write_metadata_files(root.string(), "gpu.nvidia.com", claim, vfio_devices()));
  EXPECT_FALSE(fs::exists(vm.host_path + ".tmp"));
  ASSERT_TRUE(remove_metadata_files(root.string(), claim));
  EXPECT_FALSE(fs::exists(root / "default_vm-claim"));
  EXPECT_TRUE(remove_metadata_files(root.string(), claim));  // missing is fine
  fs::remove_all(root);
}

// The kubelet helper's contract (kubeletplugin/metadata.go): a prioritized list's subrequest writes the
// file of its top-level request, on the host and in the container; the document names it in full.
TEST(MetadataFiles, SubrequestGoesToTheFileOfItsTopLevelRequest) {
  const auto root = fs::temp_directory_path() / ("nvdra-metadata-sub-" + std::to_string(::getpid()));
  fs::remove_all(root);
  MetadataDevice d{"vm/passthrough", "gpu-vfio-0", "gpu.nvidia.com", "node-a", {}};
  d.attributes["type"] = std::string("vfio");
  MetadataClaim from_template{"default", "pod-1-vm-x7k2p", "uid-3", 1, std::string("vm-gpu")};
  auto mounts = write_metadata_files(root.string(), "gpu.nvidia.com", from_template, {d});
  ASSERT_TRUE(mounts) << mounts.error().describe();
  ASSERT_EQ(mounts->size(), 1u);
  EXPECT_EQ((*mounts)[0].host_path, (root / "default_pod-1-vm-x7k2p" / "vm" / "metadata.json").string());
  EXPECT_EQ((*mounts)[0].container_path,
            "/var/run/kubernetes.io/dra-device-attributes/resourceclaimtemplates/vm-gpu/vm/gpu.nvidia.com-metadata.json");
  std::ifstream in((*mounts)[0].host_path);
  std::stringstream text;
  text << in.rdbuf();
  const auto parsed = boost::json::parse(text.str());
  EXPECT_EQ(parsed.at("requests").at(0).at("name"), "vm/passthrough");
  EXPECT_EQ(parsed.at("requests").at(0).at("devices").at(0).at("name"), "gpu-vfio-0");
  EXPECT_EQ(parsed.at("podClaimName"), "vm-gpu");
  MetadataClaim direct{"default", "vm-claim", "uid-1", 1, std::nullopt};
  EXPECT_EQ(metadata_container_path("gpu.nvidia.com", direct, "vm/passthrough"),
            "/var/run/kubernetes.io/dra-device-attributes/resourceclaims/vm-claim/vm/gpu.nvidia.com-metadata.json");
  EXPECT_EQ(metadata_host_path("/r", direct, "vm/passthrough"), "/r/default_vm-claim/vm/metadata.json");
  // Two subrequests of one request cannot share its file: refused, naming both.
  MetadataDevice other{"vm/other", "gpu-vfio-1", "gpu.nvidia.com", "node-a", {}};
  auto clash = write_metadata_files(root.string(), "gpu.nvidia.com", direct, {d, other});
  ASSERT_FALSE(clash);
  EXPECT_NE(clash.error().describe().find("vm/other and vm/passthrough"), std::string::npos)
      << clash.error().describe();
  fs::remove_all(root);
}

TEST(MetadataFiles, AnEmptyPodClaimNameKeepsTheClaimPath) {
  MetadataClaim empty{"default", "vm-claim", "uid-1", 1, std::string()};
  EXPECT_EQ(metadata_container_path("gpu.nvidia.com", empty, "vm"),
            "/var/run/kubernetes.io/dra-device-attributes/resourceclaims/vm-claim/vm/gpu.nvidia.com-metadata.json");
}

}  // namespace
}  // namespace nvdra::claims
