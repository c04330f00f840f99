// FileCheckpointStore: durable round trip, corrupt files kept aside, the lock, temp-file sweep.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "agent/claims/checkpoint/checkpoint_file_store.hpp"
#include "agent/claims/checkpoint/checkpoint_memory_store.hpp"
#include "test/claims/temp_dir.hpp"

namespace nvdra::claims {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

Checkpoint sample() {
  Checkpoint cp;
  cp.node_boot_id = "boot-1";
  CheckpointedClaim c;
  c.name = "claim-a";
  c.ns = "default";
  cp.claims["uid-a"] = c;
  return cp;
}

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void write(const std::string& path, const std::string& data) { std::ofstream(path, std::ios::binary) << data; }

std::vector<std::string> names(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(FileCheckpointStore, MissingFileLoadsAsNoCheckpoint) {
  TempDir tmp;
  auto store = FileCheckpointStore::open({tmp.path() + "/gpu.nvidia.com"}).value();
  auto loaded = store->load();
  ASSERT_TRUE(loaded.ok());
  EXPECT_FALSE(loaded->checkpoint.has_value());
}

TEST(FileCheckpointStore, SavedCheckpointLoadsBackFromAnotherStore) {
  TempDir tmp;
  {
    auto store = FileCheckpointStore::open({tmp.path()}).value();
    ASSERT_TRUE(store->save(sample()).ok());
    EXPECT_EQ(store->stats().saves, 1u);
    EXPECT_EQ(store->stats().fsyncs, 1u) << "the file only, before its rename";
  }
  auto store = FileCheckpointStore::open({tmp.path()}).value();
  auto loaded = store->load();
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  EXPECT_EQ(*loaded->checkpoint, sample());
  EXPECT_EQ(read(tmp.path() + "/checkpoint.json"), encode_checkpoint(sample()));
  EXPECT_EQ(names(tmp.path()), (std::vector<std::string>{"checkpoint.json", "cp.lock"})) << "no temp files left";
}

// A save writes the encoder's pieces (each claim's members, the commas, the skeleton) through a
// buffer, without joining them: with many buffers' worth of pieces, and a piece larger than the
// buffer (a claim with a 100,000-character name), the file is still every byte, in order.
TEST(FileCheckpointStore, ManyClaimsAreWrittenWholeAcrossWrites) {
  TempDir tmp;
  auto store = FileCheckpointStore::open({tmp.path()}).value();
  Checkpoint cp = sample();
  std::vector<std::string> changed;
  for (int i = 0; i < 700; ++i) {  // ~2,800 pieces
    CheckpointedClaim c;
    c.name = "claim-" + std::to_string(i);
    c.ns = "default";
    c.state = ClaimState::kPrepareCompleted;
    cp.claims["uid-" + std::to_string(i)] = c;
    changed.push_back("uid-" + std::to_string(i));
  }
  cp.claims["uid-350"].name = std::string(100'000, 'n');
  ASSERT_TRUE(store->save(sample()).ok());
  ASSERT_TRUE(store->save_changed(cp, changed).ok());
  EXPECT_EQ(read(tmp.path() + "/checkpoint.json"), encode_checkpoint(cp));
  auto decoded = decode_checkpoint(read(tmp.path() + "/checkpoint.json"), "checkpoint.json");
  ASSERT_TRUE(decoded.ok()) << decoded.error().message;
  EXPECT_EQ(*decoded, cp);
}

TEST(FileCheckpointStore, SavesAndFsyncsAreReportedForTheMetricsPage) {
  struct Recorder : metrics::Sink {
    std::vector<std::string> events;
    void checkpoint_save(std::string_view d) override { events.push_back("save " + std::string(d)); }
    void checkpoint_fsync(std::string_view d) override { events.push_back("fsync " + std::string(d)); }
  } sink;
  TempDir tmp;
  FileCheckpointStoreOptions options{tmp.path()};
  options.metrics = &sink;
  options.driver = "gpu.nvidia.com";
  auto store = FileCheckpointStore::open(options).value();
  ASSERT_TRUE(store->save(sample()).ok());
  EXPECT_EQ(sink.events, (std::vector<std::string>{"fsync gpu.nvidia.com", "save gpu.nvidia.com"}));
}

TEST(FileCheckpointStore, CorruptFileIsRefusedAndACopyKeptAside) {
  TempDir tmp;
  write(tmp.path() + "/checkpoint.json", encode_checkpoint(sample()).substr(0, 40));
  auto store = FileCheckpointStore::open({tmp.path()}).value();
  auto loaded = store->load();
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.error().message.find(tmp.path() + "/checkpoint.json is corrupt"), std::string::npos);
  EXPECT_NE(loaded.error().message.find("a copy is kept at " + tmp.path() + "/checkpoint.json.corrupt-"),
            std::string::npos)
      << loaded.error().message;
  EXPECT_TRUE(fs::exists(tmp.path() + "/checkpoint.json")) << "the file stays until an operator acts";
  EXPECT_FALSE(store->load().ok()) << "and keeps failing";
  EXPECT_EQ(names(tmp.path()).size(), 3u) << "one aside copy, however often it is loaded";
}

TEST(FileCheckpointStore, StartEmptyPolicyMovesTheCorruptFileAside) {
  TempDir tmp;
  const std::string bad = R"({"checksum":1,"v1":{}})";
  write(tmp.path() + "/checkpoint.json", bad);
  FileCheckpointStoreOptions opts{tmp.path()};
  opts.on_corrupt = CorruptCheckpointPolicy::kStartEmpty;
  auto store = FileCheckpointStore::open(opts).value();
  auto loaded = store->load();
  ASSERT_TRUE(loaded.ok());
  EXPECT_FALSE(loaded->checkpoint.has_value());
  ASSERT_FALSE(loaded->moved_aside.empty());
  EXPECT_EQ(read(loaded->moved_aside), bad);
  EXPECT_FALSE(fs::exists(tmp.path() + "/checkpoint.json"));
}

TEST(FileCheckpointStore, SecondStoreOnTheSameDirectoryIsRefused) {
  TempDir tmp;
  auto first = FileCheckpointStore::open({tmp.path()});
  ASSERT_TRUE(first.ok());
  auto second = FileCheckpointStore::open({tmp.path()});
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.error().message.find("cp.lock is held by another process"), std::string::npos);
}

TEST(FileCheckpointStore, TempFilesOfADeadWriterAreSweptOnOpen) {
  TempDir tmp;
  write(tmp.path() + "/.checkpoint.json.tmp.999.0", "half");
  write(tmp.path() + "/.unrelated", "keep");
  auto store = FileCheckpointStore::open({tmp.path()}).value();
  EXPECT_EQ(names(tmp.path()), (std::vector<std::string>{".unrelated", "cp.lock"}));
}

TEST(FileCheckpointStore, FailedRenameReportsThePathAndLeavesNoTempFile) {
  TempDir tmp;
  auto store = FileCheckpointStore::open({tmp.path()}).value();
  // A non-empty directory where the file should be: rename(2) fails whoever we run as.
  fs::create_directories(tmp.path() + "/checkpoint.json/x");
  auto s = store->save(sample());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("cannot rename onto " + tmp.path() + "/checkpoint.json"), std::string::npos)
      << s.error().message;
  EXPECT_EQ(store->stats().saves, 0u);
  EXPECT_EQ(names(tmp.path()), (std::vector<std::string>{"checkpoint.json", "cp.lock"}));
}

TEST(MemoryCheckpointStore, RoundTripsThroughTheEncodingAndInjectsFailures) {
  MemoryCheckpointStore store;
  EXPECT_FALSE(store.load()->checkpoint.has_value());
  ASSERT_TRUE(store.save(sample()).ok());
  EXPECT_EQ(*store.load()->checkpoint, sample());
  store.fail_next_saves(1);
  EXPECT_FALSE(store.save(Checkpoint{}).ok());
  EXPECT_EQ(*store.load()->checkpoint, sample());
  MemoryCheckpointStore corrupt("{");
  EXPECT_FALSE(corrupt.load().ok());
}


TEST(FileCheckpointStore, StartEmptyNamesTheAsideFileForWhyAndWhen) {
  TempDir tmp;
  const std::string newer = R"({"checksum":1083090442,"v1":{},"v3":{}})";
  write(tmp.path() + "/checkpoint.json", newer);
  FileCheckpointStoreOptions opts{tmp.path()};
  opts.on_corrupt = CorruptCheckpointPolicy::kStartEmpty;
  auto store = FileCheckpointStore::open(opts).value();
  auto loaded = store->load();
  ASSERT_TRUE(loaded.ok()) << loaded.error().describe();
  EXPECT_FALSE(loaded->checkpoint.has_value());
  const std::string name = fs::path(loaded->moved_aside).filename().string();
  EXPECT_TRUE(name.starts_with("checkpoint.json.unknown-version-")) << name;
  EXPECT_EQ(name.size(), std::string("checkpoint.json.unknown-version-20261124T161900Z").size()) << name;
  EXPECT_NE(loaded->problem.find("unknown version: top-level key \"v3\""), std::string::npos) << loaded->problem;
  EXPECT_EQ(read(loaded->moved_aside), newer);
}

TEST(FileCheckpointStore, StartEmptyMovesAnUnreadableCheckpointAside) {
  TempDir tmp;
  fs::create_directory(tmp.path() + "/checkpoint.json");  // read(2): EISDIR
  FileCheckpointStoreOptions opts{tmp.path()};
  opts.on_corrupt = CorruptCheckpointPolicy::kStartEmpty;
  auto store = FileCheckpointStore::open(opts).value();
  auto loaded = store->load();
  ASSERT_TRUE(loaded.ok()) << loaded.error().describe();
  EXPECT_TRUE(fs::path(loaded->moved_aside).filename().string().starts_with("checkpoint.json.unreadable-"));
  EXPECT_TRUE(fs::is_directory(loaded->moved_aside));
  EXPECT_NE(loaded->problem.find("cannot read checkpoint"), std::string::npos) << loaded->problem;
  EXPECT_FALSE(fs::exists(tmp.path() + "/checkpoint.json"));
}

TEST(FileCheckpointStore, RefusePolicyFailsOnAnUnreadableCheckpointAndLeavesIt) {
  TempDir tmp;
  fs::create_directory(tmp.path() + "/checkpoint.json");
  auto store = FileCheckpointStore::open({tmp.path()}).value();
  auto loaded = store->load();
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.error().message.find("cannot read checkpoint"), std::string::npos) << loaded.error().message;
  EXPECT_TRUE(fs::is_directory(tmp.path() + "/checkpoint.json"));
}

TEST(FileCheckpointStore, KeepCopyLeavesTheCopyWhenTheFileIsReplaced) {
  TempDir tmp;
  auto store = FileCheckpointStore::open({tmp.path()}).value();
  Checkpoint old;
  old.node_boot_id = "old-boot";
  ASSERT_TRUE(store->save(old).ok());
  auto copy = store->keep_copy("other-boot");
  ASSERT_TRUE(copy.ok()) << copy.error().describe();
  EXPECT_TRUE(fs::path(*copy).filename().string().starts_with("checkpoint.json.other-boot-"));
  Checkpoint fresh;
  fresh.node_boot_id = "new-boot";
  ASSERT_TRUE(store->save(fresh).ok());
  EXPECT_EQ(decode_checkpoint(read(*copy), *copy).value(), old);
  // A second copy within the same second gets a name of its own.
  auto second = store->keep_copy("other-boot");
  ASSERT_TRUE(second.ok());
  EXPECT_NE(*second, *copy);
}

}  // namespace
}  // namespace nvdra::claims
