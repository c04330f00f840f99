// DomainCleanup: the domain-directory work of driver-managed mode runs inside the run() the backend's
// owner awaits, so a shutdown (cancellation) that arrives while a removal is on the worker pool ends
// the run only once that step is back: the claim handler it uses can then be freed. The detached
// coroutines this replaced resumed on a freed handler in that case.
#include <gtest/gtest.h>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <future>
#include <optional>

#include "agent/claims/checkpoint/checkpoint_memory_store.hpp"
#include "agent/drivers/domain_cleanup.hpp"
#include "agent/drivers/driver_managed_claims.hpp"
#include "agent/runtime/worker_pool.hpp"
#include "cdi/memory_spec_store.hpp"

namespace nvdra::drivers {
namespace {

namespace asio = boost::asio;
namespace fs = std::filesystem;

class DomainCleanupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "domain_cleanup_test.XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    root_ = tmpl;
    fs::create_directories(root_ / "domains" / "cd-1");
    DriverManagedOptions o;
    o.plugin_dir = root_.string();
    handler_ = std::make_unique<DriverManagedClaimHandler>(pool_, nullptr, committer_, specs_, nullptr, nullptr,
                                                           nullptr, o);
  }
  void TearDown() override { fs::remove_all(root_); }

  // Runs the io_context until `done` or 30 s have passed (no sleeping: it waits on handlers).
  void run_until(const std::function<bool()>& done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!done() && std::chrono::steady_clock::now() < deadline) io_.run_one_for(std::chrono::milliseconds(50));
  }

  asio::io_context io_;  // outlives the pool and the committer
  asio::executor_work_guard<asio::io_context::executor_type> guard_{io_.get_executor()};
  runtime::WorkerPool pool_{1};
  claims::MemoryCheckpointStore checkpoints_;
  cdi::MemorySpecStore specs_;
  claims::CheckpointCommitter committer_{io_.get_executor(), pool_, checkpoints_, claims::Checkpoint{}};
  fs::path root_;
  std::unique_ptr<DriverManagedClaimHandler> handler_;
};

TEST_F(DomainCleanupTest, ShutdownDuringARemovalEndsTheRunOnlyAfterTheRemoval) {
  // The pool's one thread is held: the removal the run hands over waits in the pool's queue.
  std::promise<void> release, holding;
  auto held = release.get_future().share();
  asio::post(pool_.executor(), [held, &holding] {
    holding.set_value();
    held.wait();
  });
  holding.get_future().wait();

  DomainCleanup cleanup(io_.get_executor());
  cleanup.gone("cd-1");
  asio::cancellation_signal stop;
  std::optional<std::exception_ptr> ended;
  asio::co_spawn(io_, cleanup.run(*handler_),
                 asio::bind_cancellation_slot(stop.slot(), [&](std::exception_ptr e) { ended = e; }));
  io_.poll();
  EXPECT_EQ(cleanup.queued(), 0u) << "the run took the deleted domain";
  stop.emit(asio::cancellation_type::terminal);  // the agent shuts down
  io_.poll();
  EXPECT_FALSE(ended.has_value()) << "the run ended while its removal was on the pool: the handler could be freed "
                                     "under it";
  release.set_value();
  run_until([&] { return ended.has_value(); });
  ASSERT_TRUE(ended.has_value()) << "the run did not end after its removal came back";
  EXPECT_TRUE(*ended) << "cancelled, the run ends with operation_aborted";
  handler_.reset();  // what DriverComponent does once the run has ended
  EXPECT_FALSE(fs::exists(root_ / "domains" / "cd-1")) << "the removal in flight finished";
}

TEST_F(DomainCleanupTest, WorkQueuedBeforeTheRunIsDoneByIt) {
  DomainCleanup cleanup(io_.get_executor());
  cleanup.gone("cd-1");
  EXPECT_EQ(cleanup.queued(), 1u);
  asio::cancellation_signal stop;
  std::optional<std::exception_ptr> ended;
  asio::co_spawn(io_, cleanup.run(*handler_),
                 asio::bind_cancellation_slot(stop.slot(), [&](std::exception_ptr e) { ended = e; }));
  run_until([&] { return !fs::exists(root_ / "domains" / "cd-1"); });
  EXPECT_FALSE(fs::exists(root_ / "domains" / "cd-1"));
  EXPECT_EQ(cleanup.queued(), 0u);
  stop.emit(asio::cancellation_type::terminal);
  run_until([&] { return ended.has_value(); });
  ASSERT_TRUE(ended.has_value()) << "an idle run ends at cancellation";
}

}  // namespace
}  // namespace nvdra::drivers
