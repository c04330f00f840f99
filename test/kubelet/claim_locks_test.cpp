// ClaimLocks: the same claim is serialised, different claims never wait, a cancelled waiter leaves.
#include <gtest/gtest.h>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/this_coro.hpp>

#include <string>
#include <vector>

#include "agent/kubelet/claim_locks.hpp"

namespace nvdra::kubelet {
namespace {

namespace asio = boost::asio;

// Runs every ready handler; waiters that are still blocked stay pending.
void drain(asio::io_context& io) {
  io.restart();
  io.poll();
}

// Takes the lock and records "<tag>+" then "<tag>-" before releasing it.
asio::awaitable<void> hold(ClaimLocks& locks, std::string uid, std::string tag, std::vector<std::string>& log) {
  auto guard = co_await locks.acquire(uid);
  log.push_back(tag + "+");
  co_await asio::this_coro::throw_if_cancelled(false);
  log.push_back(tag + "-");
}

TEST(ClaimLocks, SecondCallerForTheSameClaimWaitsUntilTheFirstReleases) {
  asio::io_context io;
  ClaimLocks locks(io.get_executor());
  std::vector<std::string> log;
  std::optional<ClaimLocks::Guard> first;
  asio::co_spawn(io, [&]() -> asio::awaitable<void> { first.emplace(co_await locks.acquire("uid-1")); }, asio::detached);
  drain(io);
  asio::co_spawn(io, hold(locks, "uid-1", "b", log), asio::detached);
  asio::co_spawn(io, hold(locks, "uid-2", "other", log), asio::detached);
  drain(io);
  EXPECT_EQ(log, (std::vector<std::string>{"other+", "other-"})) << "a different claim does not wait";
  first.reset();
  drain(io);
  EXPECT_EQ(log, (std::vector<std::string>{"other+", "other-", "b+", "b-"}));
  EXPECT_EQ(locks.held(), 0u);
}

TEST(ClaimLocks, ACancelledWaiterNeverTakesTheLock) {
  asio::io_context io;
  ClaimLocks locks(io.get_executor());
  std::vector<std::string> log;
  std::optional<ClaimLocks::Guard> first;
  asio::co_spawn(io, [&]() -> asio::awaitable<void> { first.emplace(co_await locks.acquire("uid-1")); }, asio::detached);
  drain(io);
  asio::cancellation_signal cancel;
  bool cancelled = false;
  asio::co_spawn(io, hold(locks, "uid-1", "cancelled", log),
                 asio::bind_cancellation_slot(cancel.slot(), [&](std::exception_ptr e) { cancelled = e != nullptr; }));
  asio::co_spawn(io, hold(locks, "uid-1", "next", log), asio::detached);
  drain(io);
  cancel.emit(asio::cancellation_type::terminal);
  drain(io);
  EXPECT_TRUE(cancelled);
  first.reset();
  drain(io);
  EXPECT_EQ(log, (std::vector<std::string>{"next+", "next-"}));
  EXPECT_EQ(locks.held(), 0u);
}

}  // namespace
}  // namespace nvdra::kubelet
