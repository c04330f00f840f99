// Group commit: concurrent claims share fsync'd writes; each caller resumes once its own update is
// durable; failures and cancellation leave memory no further ahead than the disk.
#include <gtest/gtest.h>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include "agent/claims/checkpoint/checkpoint_committer.hpp"
#include "agent/claims/checkpoint/checkpoint_file_store.hpp"
#include "agent/claims/checkpoint/checkpoint_memory_store.hpp"
#include "agent/runtime/worker_pool.hpp"
#include "test/claims/temp_dir.hpp"

namespace nvdra::claims {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;

ClaimUpdate started(const std::string& uid) {
  CheckpointedClaim c;
  c.name = "claim-" + uid;
  c.ns = "default";
  return ClaimUpdate{uid, c};
}

// Runs `n` coroutines made by make(i) on `io` and returns their statuses once all have finished.
template <class Make>
std::vector<Status> run_all(asio::io_context& io, int n, Make make) {
  // A previous run may have stopped the context (explicitly, or by running out of work).
  io.restart();
  std::vector<Status> out(static_cast<std::size_t>(n));
  int done = 0;
  auto guard = asio::make_work_guard(io);
  for (int i = 0; i < n; ++i)
    asio::co_spawn(io, make(i), [&, i](std::exception_ptr e, Status s) {
      if (e) std::rethrow_exception(e);
      out[static_cast<std::size_t>(i)] = std::move(s);
      if (++done == n) io.stop();
    });
  io.run_for(30s);
  EXPECT_EQ(done, n) << "every caller finished before the deadline";
  return out;
}

TEST(CheckpointCommitter, SixtyFourConcurrentClaimsShareAFewFsyncs) {
  testing::TempDir tmp;
  auto store = FileCheckpointStore::open({tmp.path()}).value();
  asio::io_context io;  // declared first: pool work still finishing posts its completion here
  runtime::WorkerPool pool(2);
  CheckpointCommitter committer(io.get_executor(), pool, *store, Checkpoint{});
  auto statuses = run_all(io, 64, [&](int i) { return committer.commit({started("uid-" + std::to_string(i))}); });
  for (const auto& s : statuses) EXPECT_TRUE(s.ok());
  EXPECT_LT(store->stats().fsyncs, 64u) << "writes: " << committer.writes();
  EXPECT_LT(committer.writes(), 64u);
  EXPECT_EQ(committer.durable().claims.size(), 64u);
  auto reopened_dir = store->load();
  ASSERT_TRUE(reopened_dir.ok());
  EXPECT_EQ(reopened_dir->checkpoint->claims.size(), 64u) << "every acknowledged update is on disk";
}

TEST(CheckpointCommitter, SequentialCommitsAreEachDurableBeforeTheCallerResumes) {
  MemoryCheckpointStore store;
  asio::io_context io;  // declared first: pool work still finishing posts its completion here
  runtime::WorkerPool pool(1);
  CheckpointCommitter committer(io.get_executor(), pool, store, Checkpoint{});
  auto statuses = run_all(io, 1, [&](int) -> asio::awaitable<Status> {
    auto a = co_await committer.commit({started("a")});
    if (!a) co_return a;
    EXPECT_EQ(store.load()->checkpoint->claims.count("a"), 1u) << "durable when commit returns";
    auto erase = co_await committer.commit({ClaimUpdate{"a", std::nullopt}});
    EXPECT_TRUE(store.load()->checkpoint->claims.empty());
    co_return erase;
  });
  EXPECT_TRUE(statuses[0].ok());
  EXPECT_EQ(committer.writes(), 2u);
  EXPECT_EQ(store.stats().saves, 2u);
}

TEST(CheckpointCommitter, FailedSaveFailsItsCallersAndDropsTheirUpdatesFromMemory) {
  MemoryCheckpointStore store;
  asio::io_context io;  // declared first: pool work still finishing posts its completion here
  runtime::WorkerPool pool(1);
  CheckpointCommitter committer(io.get_executor(), pool, store, Checkpoint{});
  store.fail_next_saves(1);
  auto first = run_all(io, 1, [&](int) { return committer.commit({started("a")}); });
  ASSERT_FALSE(first[0].ok());
  EXPECT_NE(first[0].error().message.find("injected failure"), std::string::npos);
  EXPECT_TRUE(committer.current().claims.empty()) << "memory does not run ahead of the disk";
  auto second = run_all(io, 1, [&](int) { return committer.commit({started("b")}); });
  ASSERT_TRUE(second[0].ok());
  EXPECT_EQ(store.load()->checkpoint->claims.size(), 1u);
  EXPECT_EQ(store.load()->checkpoint->claims.count("b"), 1u);
}

// A store whose saves wait until the test opens the gate.
class GatedStore final : public CheckpointStore {
 public:
  Result<LoadedCheckpoint> load() override { return inner_.load(); }
  Status save(const Checkpoint& cp) override {
    {
      std::unique_lock lock(mu_);
      ++waiting_;
      cv_.notify_all();
      cv_.wait(lock, [&] { return open_; });
    }
    return inner_.save(cp);
  }
  CheckpointStats stats() const override { return inner_.stats(); }
  std::string location() const override { return "gated"; }
  void open() {
    std::lock_guard lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  void wait_for_save() {
    std::unique_lock lock(mu_);
    ASSERT_TRUE(cv_.wait_for(lock, 10s, [&] { return waiting_ > 0; }));
  }

 private:
  MemoryCheckpointStore inner_;
  std::mutex mu_;
  std::condition_variable cv_;
  int waiting_ = 0;
  bool open_ = false;
};

TEST(CheckpointCommitter, CancelledCallerReturnsAtOnceAndItsUpdateIsStillWritten) {
  GatedStore store;
  asio::io_context io;  // declared first: pool work still finishing posts its completion here
  runtime::WorkerPool pool(1);
  auto guard = asio::make_work_guard(io);
  CheckpointCommitter committer(io.get_executor(), pool, store, Checkpoint{});
  asio::cancellation_signal cancel;
  std::optional<Status> result;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        // Leave room to return normally after the cancellation (Asio 1.81, see worker_pool.hpp).
        co_await asio::this_coro::throw_if_cancelled(false);
        result = co_await committer.commit({started("a")});
      },
      asio::bind_cancellation_slot(cancel.slot(), asio::detached));
  io.poll();
  store.wait_for_save();
  cancel.emit(asio::cancellation_type::terminal);
  io.poll();
  ASSERT_TRUE(result.has_value()) << "the caller resumed while the save was still blocked";
  EXPECT_EQ(result->error().code, ErrorCode::kCancelled);
  store.open();
  bool flushed = false;
  asio::co_spawn(
      io, [&]() -> asio::awaitable<void> { co_await committer.flush(); flushed = true; io.stop(); }, asio::detached);
  io.run_for(10s);
  EXPECT_TRUE(flushed);
  EXPECT_EQ(store.load()->checkpoint->claims.count("a"), 1u);
}

TEST(CheckpointCommitter, UpdatesOfOneCallAreWrittenTogether) {
  MemoryCheckpointStore store;
  asio::io_context io;  // declared first: pool work still finishing posts its completion here
  runtime::WorkerPool pool(1);
  Checkpoint initial;
  initial.claims["old"] = started("old").claim.value();
  CheckpointCommitter committer(io.get_executor(), pool, store, initial);
  auto s = run_all(io, 1, [&](int) {
    return committer.commit({started("x"), started("y"), ClaimUpdate{"old", std::nullopt}});
  });
  ASSERT_TRUE(s[0].ok());
  EXPECT_EQ(store.stats().saves, 1u);
  auto loaded = store.load();
  const auto& claims = loaded->checkpoint->claims;
  EXPECT_EQ(claims.size(), 2u);
  EXPECT_EQ(claims.count("old"), 0u);
}

// The store's idle work (warm) runs on the pool once nothing is queued, until the store has none
// left; an update queued while a chunk runs is saved next, and warming then goes on.
class WarmingStore final : public CheckpointStore {
 public:
  explicit WarmingStore(int chunks) : chunks_(chunks) {}
  Result<LoadedCheckpoint> load() override { return inner_.load(); }
  Status save(const Checkpoint& cp) override { return inner_.save(cp); }
  Status save_changed(const Checkpoint& cp, const std::vector<std::string>& changed) override {
    log_.push_back("save");
    return inner_.save_changed(cp, changed);
  }
  bool warm(int budget) override {
    log_.push_back("warm");
    EXPECT_GT(budget, 0);
    if (on_warm) on_warm(calls_ + 1);
    return ++calls_ < chunks_;
  }
  CheckpointStats stats() const override { return inner_.stats(); }
  std::string location() const override { return "memory"; }
  std::function<void(int)> on_warm;  // called on the pool thread with the call's number
  const std::vector<std::string>& log() const { return log_; }  // read once the pool is idle

 private:
  MemoryCheckpointStore inner_;
  int chunks_;
  int calls_ = 0;
  std::vector<std::string> log_;
};

TEST(CheckpointCommitter, IdleWorkRunsBetweenSavesAndAnUpdateDuringItIsSavedNext) {
  WarmingStore store(4);
  asio::io_context io;  // declared first: pool work still finishing posts its completion here
  runtime::WorkerPool pool(1);
  CheckpointCommitter committer(io.get_executor(), pool, store, Checkpoint{});
  std::optional<Status> second;
  store.on_warm = [&](int call) {
    if (call != 2) return;
    asio::co_spawn(io, [&]() -> asio::awaitable<void> { second = co_await committer.commit({started("b")}); },
                   asio::detached);
  };
  std::optional<Status> first;
  asio::co_spawn(io, [&]() -> asio::awaitable<void> { first = co_await committer.commit({started("a")}); },
                 asio::detached);
  io.run_for(10s);  // returns once the writer, warming included, has nothing left to do
  ASSERT_TRUE(first && first->ok());
  ASSERT_TRUE(second && second->ok());
  EXPECT_EQ(store.log(), (std::vector<std::string>{"save", "warm", "warm", "save", "warm", "warm"}));
  EXPECT_EQ(committer.durable().claims.size(), 2u);
}

// A store whose warm() blocks until released, and which records every call.
class BlockingWarmStore final : public CheckpointStore {
 public:
  Result<LoadedCheckpoint> load() override { return inner_.load(); }
  Status save(const Checkpoint& cp) override { return inner_.save(cp); }
  Status save_changed(const Checkpoint& cp, const std::vector<std::string>& changed) override {
    return inner_.save_changed(cp, changed);
  }
  bool warm(int) override {
    std::unique_lock lock(mu_);
    ++warm_calls;
    cv_.notify_all();
    cv_.wait(lock, [&] { return released_; });
    warm_returned = true;
    return warm_calls < 100;  // more: only the committer's going ends the warming (100: a bound, so a
                              // committer that does not stop fails the test instead of hanging it)
  }
  CheckpointStats stats() const override { return inner_.stats(); }
  std::string location() const override { return "blocking-warm"; }
  void wait_for_warm() {
    std::unique_lock lock(mu_);
    ASSERT_TRUE(cv_.wait_for(lock, 10s, [&] { return warm_calls > 0; }));
  }
  void release() {
    std::lock_guard lock(mu_);
    released_ = true;
    cv_.notify_all();
  }
  std::mutex mu_;
  int warm_calls = 0;
  bool warm_returned = false;

 private:
  MemoryCheckpointStore inner_;
  std::condition_variable cv_;
  bool released_ = false;
};

// The owner destroys the committer (and then the store) while a warm chunk runs on the pool: the
// destructor waits for the chunk, and no job reaches the store after it.
TEST(CheckpointCommitter, DestroyedWhileAChunkRunsWaitsForItAndTheStoreIsNotReachedAfter) {
  BlockingWarmStore store;
  asio::io_context io;  // declared first: pool work still finishing posts its completion here
  runtime::WorkerPool pool(1);
  auto committer = std::make_unique<CheckpointCommitter>(io.get_executor(), pool, store, Checkpoint{});
  auto guard = asio::make_work_guard(io);
  std::thread loop([&io] { io.run(); });
  asio::co_spawn(io, [&]() -> asio::awaitable<void> { (void)co_await committer->commit({started("a")}); },
                 asio::detached);
  store.wait_for_warm();
  std::mutex mu;
  std::condition_variable cv;
  bool destroying = false, destroyed = false, chunk_done_before = false;
  asio::post(io, [&] {
    {
      std::lock_guard lock(mu);
      destroying = true;
    }
    cv.notify_all();
    committer.reset();
    std::scoped_lock lock(mu, store.mu_);
    chunk_done_before = store.warm_returned;
    destroyed = true;
    cv.notify_all();
  });
  {
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, 10s, [&] { return destroying; }));
  }
  store.release();
  {
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, 10s, [&] { return destroyed; }));
  }
  guard.reset();
  loop.join();  // the writer saw the gate closed and ended
  pool.join();
  EXPECT_TRUE(chunk_done_before) << "the destructor returned while the chunk still ran";
  std::lock_guard lock(store.mu_);
  EXPECT_EQ(store.warm_calls, 1) << "a chunk reached the store after the committer went";
}

}  // namespace
}  // namespace nvdra::claims
