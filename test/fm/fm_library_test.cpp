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
  EXPECT_TRUE((*after)[2].active);
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
