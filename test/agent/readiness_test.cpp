#include "agent/runtime/readiness.hpp"

#include <gtest/gtest.h>

namespace nvdra::runtime {
namespace {

TEST(Readiness, FiresOnlyAfterSealAndEveryCondition) {
  Readiness r;
  int fired = 0;
  r.on_ready([&] { ++fired; });
  r.expect("gpu registered");
  r.expect("gpu published");
  r.satisfy("gpu registered");
  r.satisfy("gpu published");
  EXPECT_EQ(fired, 0);  // not sealed: more conditions may still be declared
  r.seal();
  EXPECT_EQ(fired, 1);
  r.satisfy("gpu published");
  EXPECT_EQ(fired, 1);
}

TEST(Readiness, PendingNamesWhatIsMissing) {
  Readiness r;
  r.expect("a");
  r.expect("b");
  r.seal();
  r.satisfy("a");
  EXPECT_FALSE(r.ready());
  ASSERT_EQ(r.pending().size(), 1u);
  EXPECT_EQ(*r.pending().begin(), "b");
}

}  // namespace
}  // namespace nvdra::runtime
