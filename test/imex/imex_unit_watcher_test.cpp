// ImexUnitWatcher against a real dbus-daemon and a stand-in org.freedesktop.systemd1 whose unit
// states the test flips: initial read, PropertiesChanged without re-reading, an unloaded unit,
// no systemd on the bus (reported, then found when it appears), a bus restart (re-read), and
// never a start/stop call.
#include <gtest/gtest.h>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

#include "agent/drivers/imex_unit_watcher.hpp"
#include "agent/systemd_bus/bus_connection.hpp"
#include "test/imex/fake_systemd.hpp"
#include "test/systemd/bus_test_loop.hpp"
#include "test/systemd/private_bus.hpp"

namespace nvdra::drivers {
namespace {

namespace asio = boost::asio;
using nvdra::test::run_until;
using systemd_bus::BusConnection;
using systemd_bus::BusEndpoint;

constexpr const char* kUnit = "nvidia-imex.service";

class Watcher : public ::testing::Test {
 protected:
  void start_connection() {
    conn_ = std::make_unique<BusConnection>(io_.get_executor(), BusEndpoint{BusEndpoint::Kind::kAddress, bus_.address()});
    asio::co_spawn(io_, conn_->run(), asio::bind_cancellation_slot(stop_.slot(), [this](std::exception_ptr) { ended_ = true; }));
    watcher_ = std::make_unique<ImexUnitWatcher>(*conn_, kUnit);
    watcher_->on_change([this](const imex::UnitView& v) { seen_.push_back(v); });
    watcher_->start(io_.get_executor());
  }
  void TearDown() override {
    watcher_.reset();
    stop_.emit(asio::cancellation_type::terminal);
    EXPECT_TRUE(run_until(io_, [this] { return ended_; }));
  }
  bool state_is(const std::string& active, const std::string& sub) {
    return run_until(io_, [&] {
      const auto& v = watcher_->view();
      return v.reach == imex::Reach::kKnown && v.state.active_state == active && v.state.sub_state == sub;
    });
  }

  nvdra::test::PrivateBus bus_;
  asio::io_context io_;
  asio::cancellation_signal stop_;
  bool ended_ = false;
  std::unique_ptr<BusConnection> conn_;
  std::unique_ptr<ImexUnitWatcher> watcher_;
  std::vector<imex::UnitView> seen_;
};

TEST(WatcherPath, IsSystemdsEscapedUnitPath) {
  EXPECT_EQ(ImexUnitWatcher::unit_path(kUnit), "/org/freedesktop/systemd1/unit/nvidia_2dimex_2eservice");
}

TEST_F(Watcher, ReadsTheUnitThenFollowsPropertiesChangedWithoutRereading) {
  nvdra::test::FakeSystemd systemd(bus_.address());
  systemd.set(kUnit, "loaded", "active", "running");
  start_connection();
  ASSERT_TRUE(state_is("active", "running"));
  EXPECT_EQ(watcher_->view().state.load_state, "loaded");
  EXPECT_EQ(watcher_->reads(), 1u);

  systemd.set(kUnit, "loaded", "inactive", "dead");
  ASSERT_TRUE(state_is("inactive", "dead"));
  systemd.set(kUnit, "loaded", "failed", "failed");
  ASSERT_TRUE(state_is("failed", "failed"));
  systemd.set(kUnit, "loaded", "active", "running");
  ASSERT_TRUE(state_is("active", "running"));
  EXPECT_EQ(watcher_->reads(), 1u) << "signals carry the values: no polling, no re-read";
  EXPECT_GE(seen_.size(), 4u);
  EXPECT_EQ(systemd.lifecycle_calls(), 0) << "the agent must never start, stop or restart the unit";
}

TEST_F(Watcher, UnloadedUnitIsLoadedAndReportedNotFound) {
  nvdra::test::FakeSystemd systemd(bus_.address());
  start_connection();
  ASSERT_TRUE(state_is("inactive", "dead"));
  EXPECT_EQ(watcher_->view().state.load_state, "not-found");
  systemd.set(kUnit, "loaded", "active", "running");  // installed and started later
  ASSERT_TRUE(state_is("active", "running"));
}

TEST_F(Watcher, NoSystemdIsReportedThenFoundWhenItAppears) {
  start_connection();
  ASSERT_TRUE(run_until(io_, [this] { return watcher_->view().reach == imex::Reach::kNoSystemd; }));
  EXPECT_NE(watcher_->view().problem.find("org.freedesktop.systemd1"), std::string::npos);
  nvdra::test::FakeSystemd systemd(bus_.address());
  systemd.set(kUnit, "loaded", "active", "running");
  ASSERT_TRUE(state_is("active", "running"));
}

TEST_F(Watcher, RereadsAfterTheBusComesBack) {
  auto systemd = std::make_unique<nvdra::test::FakeSystemd>(bus_.address());
  systemd->set(kUnit, "loaded", "active", "running");
  start_connection();
  ASSERT_TRUE(state_is("active", "running"));
  const auto generation = conn_->generation();
  systemd.reset();
  bus_.restart();
  systemd = std::make_unique<nvdra::test::FakeSystemd>(bus_.address());
  systemd->set(kUnit, "loaded", "inactive", "dead");
  ASSERT_TRUE(run_until(io_, [&] { return conn_->generation() > generation; }));
  ASSERT_TRUE(state_is("inactive", "dead"));
  EXPECT_GE(watcher_->reads(), 2u);
}

}  // namespace
}  // namespace nvdra::drivers
