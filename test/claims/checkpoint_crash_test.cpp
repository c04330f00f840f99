// kill -9 of a process rewriting the checkpoint in a loop never leaves a torn or unverifiable
// file: after each kill the file decodes, its checksums hold, and it is one of the versions written.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <random>

#include "agent/claims/checkpoint/checkpoint_file_store.hpp"
#include "test/claims/temp_dir.hpp"

namespace nvdra::claims {
namespace {

// Version i: i claims with a padded name, so writes take a while and differ in size.
Checkpoint version(uint64_t i) {
  Checkpoint cp;
  cp.node_boot_id = "boot-" + std::to_string(i);
  for (uint64_t k = 0; k < 1 + i % 50; ++k) {
    CheckpointedClaim c;
    c.state = k % 2 ? ClaimState::kPrepareCompleted : ClaimState::kPrepareStarted;
    c.name = std::string(200 + (i % 13) * 50, static_cast<char>('a' + k % 26));
    c.ns = "ns";
    cp.claims["uid-" + std::to_string(k)] = c;
  }
  return cp;
}

TEST(CheckpointCrash, KillNineDuringARewriteLoopNeverTearsTheFile) {
  testing::TempDir tmp;
  std::mt19937 rng(20250807);
  for (int round = 0; round < 30; ++round) {
    int progress[2];
    ASSERT_EQ(::pipe(progress), 0);
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(progress[0]);
      auto store = FileCheckpointStore::open({tmp.path()});
      for (uint64_t i = static_cast<uint64_t>(round) * 1000; store.ok(); ++i) {
        if (!(*store)->save(version(i)).ok()) break;
        char b = 1;
        if (::write(progress[1], &b, 1) != 1) break;
      }
      ::_exit(1);
    }
    ::close(progress[1]);
    const int writes = 1 + static_cast<int>(rng() % 3);
    for (int i = 0; i < writes; ++i) {
      char b;
      ASSERT_EQ(::read(progress[0], &b, 1), 1) << "the writer made progress";
    }
    // A random number of cheap syscalls moves the kill across the phases of the next write.
    const unsigned spin = rng() % 20000;
    for (unsigned i = 0; i < spin; ++i) (void)::getppid();
    ::kill(pid, SIGKILL);
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ::close(progress[0]);
    auto store = FileCheckpointStore::open({tmp.path()});
    ASSERT_TRUE(store.ok()) << "the dead writer's lock is released: " << store.error().message;
    auto loaded = (*store)->load();
    ASSERT_TRUE(loaded.ok()) << "round " << round << ": " << loaded.error().message;
    ASSERT_TRUE(loaded->checkpoint.has_value());
    const auto generation = std::stoull(loaded->checkpoint->node_boot_id.substr(5));
    EXPECT_EQ(*loaded->checkpoint, version(generation)) << "round " << round;
  }
}

}  // namespace
}  // namespace nvdra::claims
