// Guards the compiler choice (top-level CMakeLists.txt): a lambda temporary with captures inside a
// co_await expression must be destroyed exactly as often as it was constructed. GCC 12 destroys it
// twice (a double free for captured strings and paths); clang 14 gets it right.
#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace asio = boost::asio;

namespace {

struct Counted {
  int* alive;
  explicit Counted(int* a) : alive(a) { ++*alive; }
  Counted(const Counted& o) : alive(o.alive) { ++*alive; }
  ~Counted() { --*alive; }
};

template <class F>
asio::awaitable<int> call(F fn) {
  co_return fn();
}

TEST(CoroutineTemporaries, LambdaCaptureInCoAwaitIsDestroyedOnce) {
  asio::io_context io;
  int alive = 0;
  int got = 0;
  asio::co_spawn(io, [&]() -> asio::awaitable<void> {
    Counted c(&alive);
    got = co_await call([c] { return *c.alive; });
  }, asio::detached);
  io.run();
  EXPECT_GE(got, 2);     // the local and at least the capture were alive inside
  EXPECT_EQ(alive, 0);   // every construction matched by exactly one destruction
}

}  // namespace
