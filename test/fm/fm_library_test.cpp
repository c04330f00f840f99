// The libnvfm.so.1 binding against the mock libnvfm.so.1 (real dlopen path), with the
// hgx-h100-nvswitch profile: the HGX table, FM's activation rules, idempotent repeats, failures
// queued in the mock's state file, FM not running, and the endpoint the binding connects to.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "fm/fabric_manager.hpp"
#include "fm/library_locator.hpp"
#include "fm/mock/fm_machine.hpp"

namespace nvdra::fm {
namespace {

namespace fs = std::filesystem;

class FmLibraryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/fm-test-XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    ::setenv("NVDRA_MOCK_PROFILE", "hgx-h100-nvswitch", 1);
    ::setenv("NVDRA_MOCK_STATE_DIR", dir_.c_str(), 1);
    socket_ = dir_ + "/fm.socket";
    std::ofstream(socket_) << "";
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string state_path() const { return dir_ + "/hgx-h100-nvswitch.fm.state"; }
  void write_state(const std::string& json) { std::ofstream(state_path()) << json; }
  std::string read_state() const {
    std::ifstream in(state_path());
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  Result<std::unique_ptr<FabricManager>> open(Endpoint e) {
    return open_fabric_manager(LoadOptions{NVDRA_MOCK_FM_LIBRARY, "/", std::move(e), std::chrono::milliseconds(1000)});
  }
  std::string dir_, socket_;
};

TEST_F(FmLibraryTest, ListsTheHgxTableAndActivatesUnderFmsRules) {
  auto fm = open(Endpoint{socket_, true});
  ASSERT_TRUE(fm.ok()) << fm.error().describe();
  EXPECT_EQ((*fm)->endpoint(), "unix:" + socket_);
  auto table = (*fm)->partitions();
  ASSERT_TRUE(table.ok()) << table.error().describe();
  ASSERT_EQ(table->size(), 15u);
  EXPECT_EQ((*table)[0].module_ids(), (std::vector<unsigned>{1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ((*table)[2].module_ids(), (std::vector<unsigned>{5, 6, 7, 8}));
  EXPECT_EQ((*table)[2].nvlink_bandwidth_gbps(), 900);
  ASSERT_TRUE((*fm)->activate(3));
  EXPECT_TRUE((*fm)->activate(3)) << "activating an active partition converges";
  auto overlap = (*fm)->activate(1);
  ASSERT_FALSE(overlap);
  EXPECT_EQ(overlap.error().message, "fabric manager: fmActivateFabricPartition(1): FM_ST_IN_USE (-7)");
  EXPECT_EQ(overlap.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(read_state().find("\"active\": [3]"), std::string::npos) << read_state();
  auto after = (*fm)->partitions();
  ASSERT_TRUE(after.ok());
  EXPECT_TRUE((*after)[3].active);
  EXPECT_EQ((*after)[3].module_ids(), (std::vector<unsigned>{1, 3}));  // FM's pair 3 on HGX H100
  ASSERT_TRUE((*fm)->deactivate(3));
  EXPECT_TRUE((*fm)->deactivate(3)) << "deactivating an inactive partition converges";
  auto bad = (*fm)->activate(99);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message, "fabric manager: fmActivateFabricPartition(99): FM_ST_BADPARAM (-1)");
}

TEST_F(FmLibraryTest, AFailureQueuedInTheStateFileIsAnsweredAndNamed) {
  write_state(R"({"active":[],"failures":[{"function":"fmActivateFabricPartition","rc":-10,"remaining":1}]})");
  auto fm = open(Endpoint{socket_, true});
  ASSERT_TRUE(fm.ok()) << fm.error().describe();
  auto st = (*fm)->activate(2);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().message, "fabric manager: fmActivateFabricPartition(2): FM_ST_NVLINK_ERROR (-10)");
  EXPECT_TRUE((*fm)->activate(2));
}

TEST_F(FmLibraryTest, AFailureUnderAnUnknownFunctionKeyIsAnErrorNotIgnored) {
  write_state(R"({"active":[],"failures":[{"function":"activate","rc":-7,"remaining":1}]})");
  auto fm = open(Endpoint{socket_, true});
  ASSERT_FALSE(fm.ok()) << "the misspelt key must not pass unnoticed";
  EXPECT_EQ(fm.error().message, "fabric manager: fmConnect(unix:" + socket_ + "): FM_ST_GENERIC_ERROR (-2)");
}

TEST_F(FmLibraryTest, FabricModeBareMetalAnswersPartitionCallsNotSupported) {
  const std::string profile = dir_ + "/bare.yaml";
  std::ofstream(profile) << "fabricManager:\n  mode: bareMetal\n";
  ::setenv("NVDRA_MOCK_PROFILE", profile.c_str(), 1);
  auto fm = open(Endpoint{socket_, true});
  ASSERT_TRUE(fm.ok()) << fm.error().describe();
  auto table = (*fm)->partitions();
  ASSERT_FALSE(table.ok());
  EXPECT_EQ(table.error().message, "fabric manager: fmGetSupportedFabricPartitions: FM_ST_NOT_SUPPORTED (-3)");
  EXPECT_EQ(table.error().code, ErrorCode::kFailedPrecondition);
}

TEST_F(FmLibraryTest, AnFmOlderThan570GetsVersion1ConnectParams) {
  // The first fmConnect (v2) answered VERSION_MISMATCH, as a pre-570 library does: v1 follows.
  write_state(R"({"active":[],"failures":[{"function":"connect","rc":-6,"remaining":1}]})");
  auto fm = open(Endpoint{socket_, true});
  ASSERT_TRUE(fm.ok()) << fm.error().describe();
  EXPECT_NE(read_state().find("\"connect\": 2"), std::string::npos) << read_state();
}

TEST_F(FmLibraryTest, ConnectFailsNamingTheEndpointWhenFmIsNotRunningOrTheSocketIsMissing) {
  auto missing = open(Endpoint{dir_ + "/no-such-socket", true});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().message,
            "fabric manager: fmConnect(unix:" + dir_ + "/no-such-socket): FM_ST_CONNECTION_NOT_VALID (-9)");
  write_state(R"({"active":[],"running":false})");
  EXPECT_FALSE(open(Endpoint{socket_, true}).ok());
}

TEST_F(FmLibraryTest, TcpEndpointDefaultsToLoopbackAsUpstream) {
  auto fm = open(Endpoint{"", false});
  ASSERT_TRUE(fm.ok()) << fm.error().describe();
  EXPECT_EQ((*fm)->endpoint(), "tcp:127.0.0.1");
  EXPECT_NE(read_state().find("\"lastConnect\": \"tcp:127.0.0.1\""), std::string::npos) << read_state();
  EXPECT_FALSE(open(Endpoint{"10.0.0.9", false}).ok());
}

TEST(FmReturnCodes, EveryCodeOfNvFmTypesHasItsName) {
  for (int rc = 0; rc >= -29; --rc)
    EXPECT_EQ(return_code_name(rc).rfind("FM_ST_", 0), 0u) << rc << ": " << return_code_name(rc);
  EXPECT_EQ(return_code_name(-10), "FM_ST_NVLINK_ERROR (-10)");
  EXPECT_EQ(return_code_name(-11), "FM_ST_RESOURCE_BAD (-11)");
  EXPECT_EQ(return_code_name(-22), "FM_ST_NOT_READY (-22)");
  EXPECT_EQ(return_code_name(-24), "FM_ST_RESOURCE_USED_IN_ANOTHER_PARTITION (-24)");
  EXPECT_EQ(return_code_name(-29), "FM_ST_PARTITION_ROUTE_PROGRAMMING_ERROR (-29)");
  EXPECT_EQ(return_code_name(-30), "FM return code -30");
  EXPECT_EQ(return_code_name(1), "FM return code 1");
}

TEST(FmHgxTable, IsFmsSharedNvswitchTableForHgxH100) {
  const auto table = hgx8_partitions();
  ASSERT_EQ(table.size(), 15u);
  const std::vector<std::vector<unsigned>> want = {{1, 2, 3, 4, 5, 6, 7, 8}, {1, 2, 3, 4}, {5, 6, 7, 8}, {1, 3}, {2, 4},
                                                   {5, 7}, {6, 8}, {1}, {2}, {3}, {4}, {5}, {6}, {7}, {8}};
  for (unsigned i = 0; i < table.size(); ++i) {
    EXPECT_EQ(table[i].id, i);
    EXPECT_EQ(table[i].module_ids(), want[i]) << "partition " << i;
  }
}

class FmProfileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/fm-profile-XXXXXX";
    dir_ = ::mkdtemp(tmpl);
  }
  void TearDown() override { fs::remove_all(dir_); }
  Result<mock::FmProfile> load(const std::string& yaml) {
    const std::string path = dir_ + "/p.yaml";
    std::ofstream(path) << yaml;
    return mock::load_fm_profile(path);
  }
  std::string dir_;
};

TEST_F(FmProfileTest, ReadsTheFabricManagerSection) {
  auto none = load("gpus: []\n");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->present);
  auto hgx = load("fabricManager:\n  running: false\n  nvlinks: 12\n  nvlinkRateMBps: 50000\n");
  ASSERT_TRUE(hgx.ok()) << hgx.error().describe();
  EXPECT_TRUE(hgx->present);
  EXPECT_FALSE(hgx->running);
  EXPECT_TRUE(hgx->shared_nvswitch);
  ASSERT_EQ(hgx->partitions.size(), 15u);
  EXPECT_EQ(hgx->partitions[1].nvlink_bandwidth_gbps(), 1200);  // 12 x 50000 MB/s x 2
  auto bare = load("fabricManager:\n  mode: bareMetal\n");
  ASSERT_TRUE(bare.ok());
  EXPECT_FALSE(bare->shared_nvswitch);
  auto listed = load("fabricManager:\n  partitions: [{id: 5, gpus: [2, 1]}]\n");
  ASSERT_TRUE(listed.ok()) << listed.error().describe();
  ASSERT_EQ(listed->partitions.size(), 1u);
  EXPECT_EQ(listed->partitions[0].id, 5u);
  EXPECT_EQ(listed->partitions[0].module_ids(), (std::vector<unsigned>{1, 2}));
}

TEST_F(FmProfileTest, RefusesUnknownFieldsModesAndPartitionsNamingTheField) {
  auto unknown = load("fabricManager:\n  colour: green\n");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message.find("fabricManager.colour: unknown field"), std::string::npos);
  auto mode = load("fabricManager:\n  mode: vgpu\n");
  ASSERT_FALSE(mode.ok());
  EXPECT_NE(mode.error().message.find("fabricManager.mode: 'vgpu' is not sharedNVSwitch or bareMetal"),
            std::string::npos);
  auto part = load("fabricManager:\n  partitions: [{id: 1}]\n");
  ASSERT_FALSE(part.ok());
  EXPECT_NE(part.error().message.find("fabricManager.partitions[0]: needs id and gpus"), std::string::npos);
  auto empty = load("fabricManager:\n  partitions: [{id: 1, gpus: []}]\n");
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.error().message.find("fabricManager.partitions[0].gpus: 1 to 16 module ids"), std::string::npos);
}

TEST(FmLibraryLocator, FindsLibnvfmUnderTheDriverRootElseTheSoname) {
  char tmpl[] = "/tmp/fm-root-XXXXXX";
  const std::string root = ::mkdtemp(tmpl);
  EXPECT_EQ(locate_fm_library("", root).path, "libnvfm.so.1");
  fs::create_directories(root + "/usr/lib64");
  std::ofstream(root + "/usr/lib64/libnvfm.so") << "";
  EXPECT_EQ(locate_fm_library("", root).path, root + "/usr/lib64/libnvfm.so");
  fs::remove(root + "/usr/lib64/libnvfm.so");
  fs::create_directories(root + "/usr/lib/x86_64-linux-gnu");
  std::ofstream(root + "/usr/lib/x86_64-linux-gnu/libnvfm.so.1") << "";
  EXPECT_EQ(locate_fm_library("", root).path, root + "/usr/lib/x86_64-linux-gnu/libnvfm.so.1");
  EXPECT_EQ(locate_fm_library("/x/libnvfm.so.1", root).path, "/x/libnvfm.so.1");
  auto opened = open_fabric_manager(LoadOptions{"", root, Endpoint{}, std::chrono::milliseconds(10)});
  ASSERT_FALSE(opened.ok());  // an empty file is no library: the error names where it looked
  EXPECT_NE(opened.error().message.find("cannot load libnvfm.so.1"), std::string::npos);
  fs::remove_all(root);
}

}  // namespace
}  // namespace nvdra::fm
