// Crash tests for FileSpecStore: a child process writes specs and is killed with SIGKILL, either at
// each named step of a write or at arbitrary moments of a rewrite loop; the file must then be the
// old content or the new one, never torn, and reopening the store sweeps the temp files.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <filesystem>
#include <random>

#include "cdi/file_spec_store.hpp"
#include "test/cdi/fake_driver_root.hpp"

namespace nvdra::cdi {
namespace {

namespace fs = std::filesystem;
constexpr const char* kFile = "k8s.gpu.nvidia.com-claim_crash.json";

// Version i of the spec: valid JSON, large enough that a write takes several syscalls' time.
std::string version(uint64_t i) {
  boost::json::object o;
  o["cdiVersion"] = "0.3.0";
  o["kind"] = "k8s.gpu.nvidia.com/claim";
  o["generation"] = i;
  o["padding"] = std::string(64 * 1024 + (i % 7) * 1000, static_cast<char>('a' + i % 26));
  return boost::json::serialize(o) + "\n";
}

int wait_child(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

std::vector<std::string> temp_files(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().starts_with('.')) out.push_back(e.path().filename().string());
  return out;
}

class CrashAtStep : public ::testing::TestWithParam<WriteStep> {};

TEST_P(CrashAtStep, KilledWriterLeavesTheOldOrTheNewFile) {
  testing::TempDir tmp;
  auto store = FileSpecStore::open(tmp.path()).value();
  ASSERT_TRUE(store->apply(std::vector<SpecChange>{SpecChange::write(kFile, version(1))}).ok());
  const WriteStep target = GetParam();
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    FileSpecStore::Options opts;
    opts.on_step = [target](WriteStep s, const std::string&) {
      if (s == target) ::raise(SIGKILL);
    };
    auto child = FileSpecStore::open(tmp.path(), opts);
    if (child.ok()) (void)(*child)->apply(std::vector<SpecChange>{SpecChange::write(kFile, version(2))});
    ::_exit(0);
  }
  int status = wait_child(pid);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "the child reached the step";
  auto content = store->read(kFile);
  ASSERT_TRUE(content.ok());
  const bool renamed = target >= WriteStep::kRenamed;
  EXPECT_EQ(*content, version(renamed ? 2 : 1));
  auto reopened = FileSpecStore::open(tmp.path());
  ASSERT_TRUE(reopened.ok());
  EXPECT_TRUE(temp_files(tmp.path()).empty()) << "stale temp files are swept on open";
}

INSTANTIATE_TEST_SUITE_P(EveryStep, CrashAtStep,
                         ::testing::Values(WriteStep::kTempOpened, WriteStep::kHalfWritten, WriteStep::kWritten,
                                           WriteStep::kFileSynced, WriteStep::kRenamed, WriteStep::kDirSynced));

TEST(SpecStoreCrash, KillBetweenTheRenamesOfASyncfsBatchLeavesEachFileOldOrNew) {
  testing::TempDir tmp;
  const std::string other = "k8s.gpu.nvidia.com-claim_other.json";
  auto store = FileSpecStore::open(tmp.path()).value();
  ASSERT_TRUE(store->apply(std::vector<SpecChange>{SpecChange::write(kFile, version(1)),
                                                   SpecChange::write(other, version(1))})
                  .ok());
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    FileSpecStore::Options opts;
    opts.batch_sync = BatchSync::kSyncfs;
    opts.on_step = [](WriteStep s, const std::string&) {
      if (s == WriteStep::kRenamed) ::raise(SIGKILL);  // after the first rename
    };
    auto child = FileSpecStore::open(tmp.path(), opts);
    if (child.ok())
      (void)(*child)->apply(std::vector<SpecChange>{SpecChange::write(kFile, version(2)),
                                                    SpecChange::write(other, version(3))});
    ::_exit(0);
  }
  int status = wait_child(pid);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  EXPECT_EQ(store->read(kFile).value(), version(2));
  EXPECT_EQ(store->read(other).value(), version(1));
  ASSERT_TRUE(FileSpecStore::open(tmp.path()).ok());
  EXPECT_TRUE(temp_files(tmp.path()).empty());
}

TEST(SpecStoreCrash, RandomKillsOfARewriteLoopNeverTearTheFile) {
  testing::TempDir tmp;
  std::mt19937 rng(20240501);
  for (int round = 0; round < 40; ++round) {
    int progress[2];
    ASSERT_EQ(::pipe(progress), 0);
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(progress[0]);
      auto child = FileSpecStore::open(tmp.path());
      for (uint64_t i = 0; child.ok(); ++i) {
        if (!(*child)->apply(std::vector<SpecChange>{SpecChange::write(kFile, version(i))}).ok()) break;
        char b = 1;
        if (::write(progress[1], &b, 1) != 1) break;
      }
      ::_exit(1);
    }
    ::close(progress[1]);
    // Let the child finish a few writes, then kill it wherever it is in the next one.
    const int writes = 1 + static_cast<int>(rng() % 4);
    for (int i = 0; i < writes; ++i) {
      char b;
      ASSERT_EQ(::read(progress[0], &b, 1), 1) << "the writer made progress";
    }
    // A random number of cheap syscalls shifts the kill across the phases of the write.
    const unsigned spin = rng() % 5000;
    for (unsigned i = 0; i < spin; ++i) (void)::getppid();
    ::kill(pid, SIGKILL);
    wait_child(pid);
    ::close(progress[0]);
    auto content = FileSpecStore::open(tmp.path()).value()->read(kFile);
    ASSERT_TRUE(content.ok()) << "round " << round;
    boost::system::error_code ec;
    auto parsed = boost::json::parse(*content, ec);
    ASSERT_FALSE(ec) << "round " << round << ": torn file of " << content->size() << " bytes";
    auto generation = parsed.at("generation").to_number<uint64_t>();
    EXPECT_EQ(*content, version(generation)) << "round " << round;
    EXPECT_TRUE(temp_files(tmp.path()).empty());
  }
}

}  // namespace
}  // namespace nvdra::cdi
