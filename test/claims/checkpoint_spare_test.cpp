// FileCheckpointStore's spare (issue #33): a save overwrites the previous content's file in place
// and exchanges names with checkpoint.json, never writes a file with another name (a kept copy, a
// symlink's target), fsyncs the directory before each overwrite since the last exchange, and falls
// back to a new file per save where the file system refuses RENAME_EXCHANGE.
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <filesystem>
#include <fstream>

#include "agent/claims/checkpoint/checkpoint_file_store.hpp"
#include "test/claims/temp_dir.hpp"

namespace nvdra::claims {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

// `claims` claims with long names: sizes that differ by whole pages.
Checkpoint of(int claims, const std::string& boot) {
  Checkpoint cp;
  cp.node_boot_id = boot;
  for (int i = 0; i < claims; ++i) {
    CheckpointedClaim c;
    c.name = "claim-" + std::to_string(i) + std::string(900, 'x');
    c.ns = "default";
    cp.claims["uid-" + std::to_string(i)] = c;
  }
  return cp;
}

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

ino_t inode(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 ? st.st_ino : 0;
}

std::vector<std::string> names(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

struct FsyncCounter : metrics::Sink {
  int fsyncs = 0;
  void checkpoint_fsync(std::string_view) override { ++fsyncs; }
};

TEST(CheckpointSpare, EachSaveOverwritesThePreviousContentsFileAndExchangesNames) {
  TempDir tmp;
  const std::string file = tmp.path() + "/checkpoint.json", spare = tmp.path() + "/.checkpoint.json.spare";
  auto store = FileCheckpointStore::open({tmp.path()}).value();
  ASSERT_TRUE(store->save(of(1, "a")).ok());
  const ino_t first = inode(file);
  EXPECT_EQ(inode(spare), 0u) << "no spare until a checkpoint exists to exchange with";
  ASSERT_TRUE(store->save(of(5, "b")).ok());
  EXPECT_EQ(inode(spare), first) << "the previous content became the spare";
  const ino_t second = inode(file);
  ASSERT_TRUE(store->save(of(2, "c")).ok());  // longer than the 1 claim in the spare
  EXPECT_EQ(inode(file), first) << "the spare was written in place and put under the checkpoint's name";
  EXPECT_EQ(inode(spare), second);
  ASSERT_TRUE(store->save(of(0, "d")).ok());  // much shorter than the 5 claims in the spare
  EXPECT_EQ(inode(file), second);
  EXPECT_EQ(read(file), encode_checkpoint(of(0, "d"))) << "nothing of the longer old content is left";
  EXPECT_EQ(decode_checkpoint(read(file), file).value(), of(0, "d"));
  EXPECT_EQ(names(tmp.path()), (std::vector<std::string>{".checkpoint.json.spare", "checkpoint.json", "cp.lock"}));
  // A new store (a restart) reads the checkpoint and goes on with the same spare.
  store.reset();
  store = FileCheckpointStore::open({tmp.path()}).value();
  EXPECT_EQ(store->load()->checkpoint.value(), of(0, "d"));
  ASSERT_TRUE(store->save(of(3, "e")).ok());
  EXPECT_EQ(inode(file), first);
  EXPECT_EQ(read(file), encode_checkpoint(of(3, "e")));
}

TEST(CheckpointSpare, TheDirectoryIsFsyncedBeforeASpareIsOverwrittenOrInIdleTime) {
  TempDir tmp;
  FsyncCounter sink;
  FileCheckpointStoreOptions options{tmp.path()};
  options.metrics = &sink;
  auto store = FileCheckpointStore::open(options).value();
  auto fsyncs_of = [&](auto&& step) {
    const int before = sink.fsyncs;
    step();
    return sink.fsyncs - before;
  };
  EXPECT_EQ(fsyncs_of([&] { ASSERT_TRUE(store->save(of(1, "a")).ok()); }), 1) << "a new file: no spare to retire";
  EXPECT_EQ(fsyncs_of([&] { ASSERT_TRUE(store->save(of(1, "b")).ok()); }), 1) << "a new spare, exchanged";
  EXPECT_EQ(fsyncs_of([&] { ASSERT_TRUE(store->save(of(1, "c")).ok()); }), 2)
      << "the last exchange made durable (the directory), then the overwritten spare";
  EXPECT_EQ(fsyncs_of([&] { store->warm(16); }), 1) << "idle time makes the directory fsync ahead";
  EXPECT_EQ(fsyncs_of([&] { store->warm(16); }), 0);
  EXPECT_EQ(fsyncs_of([&] { ASSERT_TRUE(store->save(of(1, "d")).ok()); }), 1) << "done ahead: not again";
  // A restart cannot know whether the last exchange reached the disk.
  store.reset();
  store = FileCheckpointStore::open(options).value();
  EXPECT_EQ(fsyncs_of([&] { ASSERT_TRUE(store->save(of(1, "e")).ok()); }), 2);
}

TEST(CheckpointSpare, AKeptCopyIsNeverOverwritten) {
  TempDir tmp;
  auto store = FileCheckpointStore::open({tmp.path()}).value();
  ASSERT_TRUE(store->save(of(1, "a")).ok());
  ASSERT_TRUE(store->save(of(2, "old-boot")).ok());
  auto copy = store->keep_copy("other-boot");
  ASSERT_TRUE(copy.ok()) << copy.error().describe();
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(store->save(of(i, "new-" + std::to_string(i))).ok());
  EXPECT_EQ(read(*copy), encode_checkpoint(of(2, "old-boot"))) << "the copy's file was not reused as the spare";
  EXPECT_EQ(read(tmp.path() + "/checkpoint.json"), encode_checkpoint(of(2, "new-2")));
}

TEST(CheckpointSpare, ASymlinkedSpareIsReplacedAndItsTargetLeftAlone) {
  TempDir tmp;
  const std::string victim = tmp.path() + "/victim";
  std::ofstream(victim) << "keep me";
  auto store = FileCheckpointStore::open({tmp.path()}).value();
  ASSERT_TRUE(store->save(of(1, "a")).ok());
  fs::create_symlink(victim, tmp.path() + "/.checkpoint.json.spare");
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(store->save(of(i, "b" + std::to_string(i))).ok());
  EXPECT_EQ(read(victim), "keep me");
  EXPECT_FALSE(fs::is_symlink(tmp.path() + "/.checkpoint.json.spare"));
  EXPECT_EQ(read(tmp.path() + "/checkpoint.json"), encode_checkpoint(of(2, "b2")));
}

TEST(CheckpointSpare, ADirectoryUnderTheSparesNameLeavesSavesOnNewFiles) {
  TempDir tmp;
  fs::create_directories(tmp.path() + "/.checkpoint.json.spare/x");
  auto store = FileCheckpointStore::open({tmp.path()}).value();
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(store->save(of(i, "b" + std::to_string(i))).ok());
  EXPECT_EQ(read(tmp.path() + "/checkpoint.json"), encode_checkpoint(of(2, "b2")));
  EXPECT_TRUE(fs::exists(tmp.path() + "/.checkpoint.json.spare/x")) << "not ours to remove";
  EXPECT_EQ(names(tmp.path()), (std::vector<std::string>{".checkpoint.json.spare", "checkpoint.json", "cp.lock"}))
      << "no temp file left";
}

int refuse_exchange(const char*, const char*) {
  errno = EINVAL;
  return -1;
}

TEST(CheckpointSpare, WhereTheExchangeIsRefusedEachSaveRenamesANewFile) {
  TempDir tmp;
  const std::string file = tmp.path() + "/checkpoint.json";
  FileCheckpointStoreOptions options{tmp.path()};
  options.exchange = &refuse_exchange;
  auto store = FileCheckpointStore::open(options).value();
  std::vector<ino_t> seen;
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(store->save(of(i % 3, "b" + std::to_string(i))).ok());
    EXPECT_EQ(read(file), encode_checkpoint(of(i % 3, "b" + std::to_string(i))));
    seen.push_back(inode(file));
  }
  EXPECT_EQ(names(tmp.path()), (std::vector<std::string>{"checkpoint.json", "cp.lock"})) << "no spare, no temp file";
  for (std::size_t i = 1; i < seen.size(); ++i) EXPECT_NE(seen[i], seen[i - 1]) << "a new file each save";
}

}  // namespace
}  // namespace nvdra::claims
