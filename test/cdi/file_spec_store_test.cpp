#include "cdi/file_spec_store.hpp"

#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>

#include "cdi/memory_spec_store.hpp"
#include "cdi/naming.hpp"
#include "cdi/spec_builder.hpp"
#include "test/cdi/fake_driver_root.hpp"
#include "test/support/prerequisite.hpp"

namespace nvdra::cdi {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

std::vector<std::string> dir_entries(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

BuiltSpec claim(const std::string& uid) {
  ContainerEdits e;
  e.device_nodes.push_back(DeviceNode{.path = "/dev/nvidia0"});
  return build_claim_spec(kGpuVendor, uid, {{"gpu-0", e}}).value();
}

TEST(FileSpecStore, WrittenSpecIsWorldReadableWhateverTheUmask) {
  TempDir tmp;
  auto store = FileSpecStore::open(tmp.path() + "/cdi");
  ASSERT_TRUE(store.ok()) << store.error().describe();
  mode_t old = ::umask(077);
  auto s = (*store)->write(claim("uid-1"));
  ::umask(old);
  ASSERT_TRUE(s.ok()) << s.error().describe();
  struct stat st {};
  ASSERT_EQ(::stat((tmp.path() + "/cdi/k8s.gpu.nvidia.com-claim_uid-1.yaml").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
  EXPECT_EQ(*(*store)->read("k8s.gpu.nvidia.com-claim_uid-1.yaml"), claim("uid-1").content);
  EXPECT_EQ(*(*store)->list(), std::vector<std::string>{"k8s.gpu.nvidia.com-claim_uid-1.yaml"});
  EXPECT_EQ(dir_entries(tmp.path() + "/cdi"), std::vector<std::string>{"k8s.gpu.nvidia.com-claim_uid-1.yaml"})
      << "no temp file left behind";
}

TEST(FileSpecStore, RemoveClaimTakesOutOursAndAnUpstreamYamlTwinAndToleratesAbsence) {
  TempDir tmp;
  auto store = FileSpecStore::open(tmp.path()).value();
  ASSERT_TRUE(store->write(claim("uid-2")).ok());
  testing::write_file(tmp.path() + "/k8s.gpu.nvidia.com-claim_uid-2.yaml", "cdiVersion: 0.5.0\n");
  ASSERT_TRUE(store->remove_claim(kGpuVendor, "uid-2").ok());
  EXPECT_TRUE(dir_entries(tmp.path()).empty());
  EXPECT_TRUE(store->remove_claim(kGpuVendor, "uid-2").ok()) << "unprepare twice converges";
  EXPECT_EQ(store->read("k8s.gpu.nvidia.com-claim_uid-2.yaml").error().code, ErrorCode::kNotFound);
}

TEST(FileSpecStore, OpenCreatesTheDirectoryRefusesAFileAndSweepsStaleTempFiles) {
  TempDir tmp;
  testing::write_file(tmp.path() + "/file", "x");
  auto refused = FileSpecStore::open(tmp.path() + "/file");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("not a directory"), std::string::npos);
  testing::write_file(tmp.path() + "/cdi/.k8s.gpu.nvidia.com-claim_x.yaml.tmp.123.0", "{\"torn");
  testing::write_file(tmp.path() + "/cdi/other-vendor.json", "{}");
  auto store = FileSpecStore::open(tmp.path() + "/cdi");
  ASSERT_TRUE(store.ok());
  EXPECT_EQ(dir_entries(tmp.path() + "/cdi"), std::vector<std::string>{"other-vendor.json"});
  // This process's own temp files are another store's write in progress (the two drivers share the
  // root and open it concurrently at start): left alone.
  const std::string live = ".k8s.compute-domain.nvidia.com-device_base.yaml.tmp." + std::to_string(::getpid()) + ".0";
  testing::write_file(tmp.path() + "/cdi/" + live, "{\"half");
  ASSERT_TRUE(FileSpecStore::open(tmp.path() + "/cdi").ok());
  EXPECT_EQ(dir_entries(tmp.path() + "/cdi"), (std::vector<std::string>{live, "other-vendor.json"}));
}

TEST(FileSpecStore, WriteIfChangedLeavesAnIdenticalFileAlone) {
  TempDir tmp;
  auto store = FileSpecStore::open(tmp.path()).value();
  auto spec = claim("uid-3");
  EXPECT_EQ(store->write_if_changed(spec).value(), true);
  struct stat before {}, after {};
  ::stat((tmp.path() + "/" + spec.file_name).c_str(), &before);
  EXPECT_EQ(store->write_if_changed(spec).value(), false);
  ::stat((tmp.path() + "/" + spec.file_name).c_str(), &after);
  EXPECT_EQ(before.st_ino, after.st_ino) << "not rewritten";
  spec.content += " ";
  EXPECT_EQ(store->write_if_changed(spec).value(), true);
}

TEST(FileSpecStore, ABatchOfClaimsSyncsTheDirectoryOnce) {
  TempDir tmp;
  int dir_syncs = 0, file_syncs = 0;
  FileSpecStore::Options opts;
  opts.on_step = [&](WriteStep s, const std::string&) {
    dir_syncs += s == WriteStep::kDirSynced;
    file_syncs += s == WriteStep::kFileSynced;
  };
  auto store = FileSpecStore::open(tmp.path(), opts).value();
  ASSERT_TRUE(store->write(claim("old")).ok());
  std::vector<SpecChange> batch{SpecChange::write(claim("a")), SpecChange::write(claim("b")),
                                SpecChange::write(claim("c"))};
  auto removal = claim_removal(kGpuVendor, "old");
  batch.insert(batch.end(), removal.begin(), removal.end());
  ASSERT_TRUE(store->apply(batch).ok());
  EXPECT_EQ(file_syncs, 4);
  EXPECT_EQ(dir_syncs, 2) << "one for the single write, one for the batch";
  EXPECT_EQ(store->list().value(),
            (std::vector<std::string>{"k8s.gpu.nvidia.com-claim_a.yaml", "k8s.gpu.nvidia.com-claim_b.yaml",
                                      "k8s.gpu.nvidia.com-claim_c.yaml"}));
}

// A removal that finds nothing changes nothing: no directory sync (every start asks to remove an
// older nvdra's base spec, which is almost never there). One that removes a spec syncs once.
TEST(FileSpecStore, RemovingSpecsAlreadyGoneSyncsNothing) {
  TempDir tmp;
  int dir_syncs = 0;
  FileSpecStore::Options opts;
  opts.on_step = [&](WriteStep s, const std::string&) { dir_syncs += s == WriteStep::kDirSynced; };
  auto store = FileSpecStore::open(tmp.path(), opts).value();
  ASSERT_TRUE(store->remove_claim(kGpuVendor, "never-there").ok());
  EXPECT_EQ(dir_syncs, 0);
  ASSERT_TRUE(store->write(claim("here")).ok());
  ASSERT_EQ(dir_syncs, 1);
  ASSERT_TRUE(store->remove_claim(kGpuVendor, "here").ok());
  EXPECT_EQ(dir_syncs, 2);
  EXPECT_TRUE(dir_entries(tmp.path()).empty());
}

TEST(FileSpecStore, OnTmpfsAsVarRunCdiIsTheStoreKnowsItsFilesAreInMemoryAndStillWritesAtomically) {
  struct stat st {};
  NVDRA_REQUIRE_PREREQUISITE(::stat("/dev/shm", &st) == 0, "/dev/shm");
  char tmpl[] = "/dev/shm/nvdra-cdi-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  {
    auto store = FileSpecStore::open(dir).value();
    EXPECT_TRUE(store->in_memory()) << "/dev/shm is a tmpfs";
    ASSERT_TRUE(store->write(claim("a")).ok());
    EXPECT_EQ(dir_entries(dir), (std::vector<std::string>{"k8s.gpu.nvidia.com-claim_a.yaml"})) << "no temp files";
    auto removal = claim_removal(kGpuVendor, "a");
    ASSERT_TRUE(store->apply(removal).ok());
    EXPECT_TRUE(dir_entries(dir).empty());
  }
  fs::remove_all(dir);
  TempDir disk;
  struct statfs fs_info {};
  ASSERT_EQ(::statfs(disk.path().c_str(), &fs_info), 0);
  if (fs_info.f_type != TMPFS_MAGIC) EXPECT_FALSE(FileSpecStore::open(disk.path()).value()->in_memory());
}

TEST(FileSpecStore, ABadFileNameFailsTheWholeBatchAndAVanishedDirectoryIsAnErrorNamingThePath) {
  TempDir tmp;
  auto store = FileSpecStore::open(tmp.path() + "/cdi").value();
  auto bad = store->apply(std::vector<SpecChange>{SpecChange::write(claim("a")), SpecChange::write("../escape.json", "{}")});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("../escape.json"), std::string::npos);
  EXPECT_TRUE(dir_entries(tmp.path() + "/cdi").empty()) << "a failure before the renames applies nothing";
  EXPECT_FALSE(fs::exists(tmp.path() + "/escape.json"));
  fs::remove_all(tmp.path() + "/cdi");
  auto gone = store->write(claim("uid-4"));
  ASSERT_FALSE(gone.ok());
  EXPECT_NE(gone.error().message.find(tmp.path() + "/cdi/"), std::string::npos);
}

TEST(MemorySpecStore, InjectedFailureStopsTheBatchAfterTheGivenChanges) {
  MemorySpecStore store;
  store.fail_next(make_error(ErrorCode::kUnavailable, "disk full"), 1);
  std::vector<SpecChange> batch{SpecChange::write(claim("a")), SpecChange::write(claim("b"))};
  auto s = store.apply(batch);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message, "disk full");
  EXPECT_EQ(store.list().value(), std::vector<std::string>{"k8s.gpu.nvidia.com-claim_a.yaml"});
  ASSERT_TRUE(store.apply(batch).ok()) << "a retry converges";
  EXPECT_EQ(store.files().size(), 2u);
  EXPECT_EQ(store.batches(), 2u);
  ASSERT_TRUE(store.remove_claim(kGpuVendor, "a").ok());
  EXPECT_EQ(store.files().size(), 1u);
}

}  // namespace
}  // namespace nvdra::cdi
