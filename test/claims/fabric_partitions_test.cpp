// FabricPartitions against the FakeFabricManager: activation after the plan, shared partitions
// released by their last claim, overlap refused per claim, FM errors and the deadline.
#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>

#include <condition_variable>
#include <thread>
#include <mutex>

#include "agent/claims/fabric/fabric_partitions.hpp"
#include "agent/runtime/worker_pool.hpp"
#include "fm/fake_fabric_manager.hpp"
#include "test/support/run_awaitable.hpp"

namespace nvdra::claims {
namespace {

using nvdra::testing::run_awaitable;

class FabricPartitionsTest : public ::testing::Test {
 protected:
  FabricPartitionsTest() {
    for (unsigned m = 1; m <= 8; ++m) session_.module_of_gpu["GPU-" + std::to_string(m)] = m;
    session_.manager = fake_;
    session_.table = fm::hgx8_partitions();
    fabric_ = std::make_unique<FabricPartitions>(io_.get_executor(), session_, FabricGates{true, true},
                                                 metrics::null_sink());
  }
  static std::vector<std::string> gpus(std::initializer_list<unsigned> modules) {
    std::vector<std::string> out;
    for (unsigned m : modules) out.push_back("GPU-" + std::to_string(m));
    return out;
  }
  Status prepare(const std::string& uid, std::vector<std::string> g, std::optional<FabricTopologyConfig> c = {}) {
    auto plan = fabric_->plan(uid, g, c);
    if (!plan) return plan.error();
    return run_awaitable(io_, fabric_->activate(kubelet::ClaimRef{"ns", uid, uid}, *plan));
  }
  Status release(const std::string& uid) { return run_awaitable(io_, fabric_->release(kubelet::ClaimRef{"ns", uid, uid})); }

  boost::asio::io_context io_;
  runtime::WorkerPool pool_{2};
  std::shared_ptr<fm::FakeFabricManager> fake_ = std::make_shared<fm::FakeFabricManager>();
  FabricSession session_;
  std::unique_ptr<FabricPartitions> fabric_;
};

TEST_F(FabricPartitionsTest, AFourGpuClaimActivatesItsPartitionAndReleaseDeactivatesIt) {
  ASSERT_TRUE(prepare("a", gpus({5, 6, 7, 8})));
  EXPECT_EQ(fake_->active(), std::vector<unsigned>{2});
  ASSERT_EQ(fabric_->active().size(), 1u);
  EXPECT_EQ(fabric_->active()[0].claims, std::vector<std::string>{"a"});
  ASSERT_TRUE(release("a"));
  EXPECT_TRUE(fake_->active().empty());
  EXPECT_TRUE(release("a"));  // again: nothing held, nothing called
  EXPECT_EQ(fake_->calls("deactivate"), 1);
}

TEST_F(FabricPartitionsTest, APartitionTwoClaimsHoldStaysActiveUntilTheLastLetsGo) {
  FabricTopologyConfig manual{"Manual", std::nullopt, "BareMetal", {}, {}, {"0"}};
  ASSERT_TRUE(prepare("a", gpus({1, 2}), manual));
  ASSERT_TRUE(prepare("b", gpus({3, 4}), manual));
  EXPECT_EQ(fake_->active(), std::vector<unsigned>{0});
  ASSERT_TRUE(release("a"));
  EXPECT_EQ(fake_->active(), std::vector<unsigned>{0});
  ASSERT_TRUE(release("b"));
  EXPECT_TRUE(fake_->active().empty());
}

TEST_F(FabricPartitionsTest, EveryOverlapIsNamedInPartitionOrderWhateverTheClaimsAreCalled) {
  ASSERT_TRUE(prepare("z", gpus({1, 2, 3, 4})));  // partition 1
  ASSERT_TRUE(prepare("a", gpus({5, 6, 7, 8})));  // partition 2
  FabricTopologyConfig manual{"Manual", std::nullopt, "BareMetal", {}, {}, {"0"}};
  auto st = prepare("b", gpus({1, 5}), manual);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().message,
            "fabric partition 0 [1 2 3 4 5 6 7 8] overlaps partition 1 [1 2 3 4], which prepared claim z holds active, "
            "and partition 2 [5 6 7 8], which prepared claim a holds active; Fabric Manager cannot activate them "
            "together");
}

TEST_F(FabricPartitionsTest, AnOverlappingClaimFailsAloneBeforeFmIsAsked) {
  ASSERT_TRUE(prepare("a", gpus({1, 2, 3, 4})));
  FabricTopologyConfig manual{"Manual", std::nullopt, "BareMetal", {}, {}, {"0"}};
  auto st = prepare("b", gpus({5, 6}), manual);
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message.find("overlaps partition 1 [1 2 3 4], which prepared claim a holds"), std::string::npos)
      << st.error().message;
  EXPECT_EQ(fake_->calls("activate"), 1);
  EXPECT_EQ(fake_->active(), std::vector<unsigned>{1});
}

TEST_F(FabricPartitionsTest, AHeldPlanRefusesAnOverlappingPlanBeforeEitherIsActivated) {
  // Two prepares in one kubelet call: the second is planned while the first awaits its checkpoint.
  auto first = fabric_->plan("a", gpus({1, 2, 3, 4}), std::nullopt);
  ASSERT_TRUE(first.ok());
  fabric_->hold("a", *first);
  FabricTopologyConfig manual{"Manual", std::nullopt, "BareMetal", {}, {}, {"0"}};
  EXPECT_FALSE(fabric_->plan("b", gpus({5, 6}), manual).ok());
  fabric_->forget("a");  // its PrepareStarted commit failed
  EXPECT_TRUE(fabric_->plan("b", gpus({5, 6}), manual).ok());
  EXPECT_EQ(fake_->calls("activate"), 0);
}

TEST_F(FabricPartitionsTest, AnFmErrorNamesTheCallAndTheReturnCodeAndReleaseUndoesIt) {
  fake_->fail_next("activate", -10);
  auto st = prepare("a", gpus({1, 3}));
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().message, "fabric manager: fmActivateFabricPartition(3): FM_ST_NVLINK_ERROR (-10)");
  ASSERT_TRUE(release("a"));  // the handler's rollback: deactivating an inactive partition succeeds
  EXPECT_TRUE(fake_->active().empty());
}

TEST_F(FabricPartitionsTest, AdoptedClaimsAreReactivatedWhenFmLostThem) {
  auto plan = fabric_->plan("a", gpus({1, 3}), std::nullopt);
  ASSERT_TRUE(plan.ok());
  fabric_->adopt("a", *plan);
  ASSERT_TRUE(run_awaitable(io_, fabric_->reconcile()));
  EXPECT_EQ(fake_->active(), std::vector<unsigned>{3});
}

// An FM that does not answer: the call fails at the deadline, the agent does not hang.
class StuckFabricManager final : public fm::FabricManager {
 public:
  Result<std::vector<fm::Partition>> partitions() override { return fm::hgx8_partitions(); }
  Status activate(unsigned) override {
    std::unique_lock lock(mu);
    threads.push_back(std::this_thread::get_id());
    cv.wait(lock, [&] { return released; });
    return {};
  }
  Status deactivate(unsigned) override {
    std::lock_guard lock(mu);
    threads.push_back(std::this_thread::get_id());
    return {};
  }
  std::string endpoint() const override { return "stuck:"; }
  void release() {
    std::lock_guard lock(mu);
    released = true;
    cv.notify_all();
  }
  std::mutex mu;
  std::condition_variable cv;
  bool released = false;
  std::vector<std::thread::id> threads;  // where each call ran
};

TEST_F(FabricPartitionsTest, AnFmCallPastTheDeadlineFailsTheClaimAndFmCallsQueueOnOneThreadOfTheirOwn) {
  auto stuck = std::make_shared<StuckFabricManager>();
  session_.manager = stuck;
  FabricPartitions fabric(io_.get_executor(), session_, FabricGates{true, false}, metrics::null_sink(),
                          std::chrono::milliseconds(50));
  auto plan = fabric.plan("a", gpus({1, 3}), std::nullopt);
  ASSERT_TRUE(plan.ok());
  auto st = run_awaitable(io_, fabric.activate(kubelet::ClaimRef{"ns", "a", "a"}, *plan));
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().message, "fabric manager: fmActivateFabricPartition(3) did not answer within 50 ms");
  // The next FM call waits behind the stuck one on FM's single thread (on a pool, it would take a
  // second thread and answer at once; repeated hangs would take them all), and times out the same way.
  auto again = run_awaitable(io_, fabric.release(kubelet::ClaimRef{"ns", "a", "a"}));
  ASSERT_FALSE(again) << "deactivate ran beside the stuck activate: FM calls are not on one thread";
  EXPECT_EQ(again.error().message, "fabric manager: fmDeactivateFabricPartition(3) did not answer within 50 ms");
  stuck->release();
  // FM answers again: the queued calls drain, and the claim's release goes through.
  EXPECT_TRUE(run_awaitable(io_, fabric.release(kubelet::ClaimRef{"ns", "a", "a"})));
  std::lock_guard lock(stuck->mu);
  ASSERT_EQ(stuck->threads.size(), 3u);  // activate, the late deactivate, the last deactivate
  for (const auto& t : stuck->threads) {
    EXPECT_EQ(t, stuck->threads[0]);
    EXPECT_NE(t, std::this_thread::get_id());
  }
}

TEST_F(FabricPartitionsTest, ConnectingIsBoundedByTheDeadlineAndAFailedConnectionFailsClaimsNamingIt) {
  FabricSession down;
  down.nvswitch = true;
  down.module_of_gpu = session_.module_of_gpu;
  FabricPartitions fabric(io_.get_executor(), down, FabricGates{true, false}, metrics::null_sink(),
                          std::chrono::milliseconds(50));
  auto stuck = std::make_shared<StuckFabricManager>();
  auto hung = run_awaitable(io_, fabric.connect([stuck]() -> Result<FmConnection> {
    (void)stuck->activate(0);  // blocks until released: an FM that never answers fmConnect
    return make_error(ErrorCode::kUnavailable, "late");
  }));
  ASSERT_FALSE(hung);
  EXPECT_NE(hung.error().message.find("did not answer within 50 ms"), std::string::npos) << hung.error().message;
  auto refused = fabric.plan("a", gpus({1, 2, 3, 4}), std::nullopt);
  ASSERT_FALSE(refused.ok()) << "a claim needing a partition is not prepared without one";
  EXPECT_NE(refused.error().message.find("fabric manager is not connected (fabric manager: fmConnect / "
                                         "fmGetSupportedFabricPartitions did not answer within 50 ms)"),
            std::string::npos)
      << refused.error().message;
  stuck->release();
  auto fake = fake_;
  ASSERT_TRUE(run_awaitable(io_, fabric.connect([fake]() -> Result<FmConnection> {
    return FmConnection{fake, fm::hgx8_partitions()};
  })));
  auto planned = fabric.plan("a", gpus({1, 2, 3, 4}), std::nullopt);
  ASSERT_TRUE(planned.ok()) << planned.error().describe();
  EXPECT_EQ(planned->partitions, std::vector<unsigned>{1});
}

TEST_F(FabricPartitionsTest, KeepConnectingRetriesUntilFmAnswers) {
  FabricSession down;
  down.nvswitch = true;
  FabricPartitions fabric(io_.get_executor(), down, FabricGates{true, false}, metrics::null_sink());
  int attempts = 0;
  bool connected = false;
  auto fake = fake_;
  fabric.keep_connecting(
      [&attempts, fake]() -> Result<FmConnection> {
        if (++attempts < 2) return make_error(ErrorCode::kUnavailable, "fabric manager: FM_ST_CONNECTION_NOT_VALID (-9)");
        return FmConnection{fake, fm::hgx8_partitions()};
      },
      [&]() -> boost::asio::awaitable<void> {
        connected = true;
        co_return;
      });
  while (!connected && io_.run_one()) {
  }
  EXPECT_TRUE(connected);
  EXPECT_EQ(attempts, 2);
  EXPECT_TRUE(fabric.session().manager != nullptr);
  io_.restart();
}

TEST_F(FabricPartitionsTest, AFullPassthroughPlanIsHeldWithoutFmAndBlocksAnOverlappingActivation) {
  FabricTopologyConfig guest{"Auto", 4, "FullPassthrough", {}, {}, {}};
  ASSERT_TRUE(prepare("g", gpus({1, 2, 3, 4}), guest));
  EXPECT_EQ(fake_->calls("activate"), 0);
  EXPECT_TRUE(fake_->active().empty());
  FabricTopologyConfig whole{"Manual", std::nullopt, "BareMetal", {}, {}, {"0"}};
  auto st = prepare("b", gpus({5, 6, 7, 8}), whole);
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message.find("overlaps partition 1 [1 2 3 4], which prepared claim g holds for its guest"),
            std::string::npos)
      << st.error().message;
  EXPECT_EQ(fake_->calls("activate"), 0);
  ASSERT_TRUE(release("g"));
  EXPECT_EQ(fake_->calls("deactivate"), 0);
  EXPECT_TRUE(prepare("b", gpus({5, 6, 7, 8}), whole));
  EXPECT_EQ(fake_->active(), std::vector<unsigned>{0});
}

}  // namespace
}  // namespace nvdra::claims
