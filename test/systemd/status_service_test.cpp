// StatusService end to end on a private dbus-daemon: nvdractl's client reads back exactly the
// snapshot the service published, GetClaim answers per uid, and the property list is stable.
#include "agent/systemd_bus/status_service.hpp"

#include <gtest/gtest.h>
#include <systemd/sd-bus.h>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <atomic>
#include <optional>
#include <thread>

#include "agent/ctl/status_client.hpp"
#include "agent/systemd_bus/status_codec.hpp"
#include "test/systemd/bus_test_loop.hpp"
#include "test/systemd/private_bus.hpp"
#include "test/systemd/sample_snapshot.hpp"

namespace asio = boost::asio;
using namespace nvdra::systemd_bus;
using nvdra::test::run_until;

namespace {

class ServiceOnPrivateBus : public ::testing::Test {
 protected:
  void SetUp() override {
    service_.update(nvdra::test::sample_snapshot());
    asio::co_spawn(io_, service_.run(),
                   asio::bind_cancellation_slot(stop_.slot(), [this](std::exception_ptr) { ended_ = true; }));
    ASSERT_TRUE(run_until(io_, [this] { return service_.owns_name(); }));
  }
  void TearDown() override {
    stop_.emit(asio::cancellation_type::all);
    EXPECT_TRUE(run_until(io_, [this] { return ended_; }));
  }
  // Runs a blocking client on its own thread while the service answers on this one.
  template <class Fn>
  auto blocking(Fn fn) {
    std::optional<decltype(fn())> out;
    // The flag, not out.has_value(), is what this thread polls while the client writes `out` (a
    // data race ThreadSanitizer reported); release/acquire orders the write before the read.
    std::atomic<bool> finished{false};
    std::thread t([&] {
      out.emplace(fn());
      finished.store(true, std::memory_order_release);
    });
    const bool done = run_until(io_, [&] { return finished.load(std::memory_order_acquire); });
    t.join();
    EXPECT_TRUE(done);
    return std::move(*out);
  }

  nvdra::test::PrivateBus bus_;
  asio::io_context io_;
  StatusService service_{io_.get_executor(), BusEndpoint{BusEndpoint::Kind::kAddress, bus_.address()}};
  asio::cancellation_signal stop_;
  bool ended_ = false;
};

}  // namespace

TEST_F(ServiceOnPrivateBus, ClientReadsBackExactlyThePublishedSnapshot) {
  auto got = blocking([this] { return nvdra::ctl::fetch_status({bus_.address(), 5000}); });
  ASSERT_TRUE(got.ok()) << got.error().message;
  EXPECT_EQ(*got, nvdra::test::sample_snapshot());
}

TEST_F(ServiceOnPrivateBus, ClientSeesTheLatestUpdate) {
  auto snap = nvdra::test::sample_snapshot();
  snap.devices[0].health = kHealthUnhealthy;
  snap.claims.clear();
  service_.update(snap);
  auto got = blocking([this] { return nvdra::ctl::fetch_status({bus_.address(), 5000}); });
  ASSERT_TRUE(got.ok()) << got.error().message;
  EXPECT_EQ(got->devices[0].health, "unhealthy");
  EXPECT_TRUE(got->claims.empty());
}

TEST_F(ServiceOnPrivateBus, GetClaimAnswersKnownUidsAndNamesUnknownOnes) {
  auto call = [this](const char* uid) {
    return blocking([this, uid]() -> std::pair<std::string, ClaimStatus> {
      sd_bus* b = nullptr;
      sd_bus_new(&b);
      sd_bus_set_address(b, bus_.address().c_str());
      sd_bus_set_bus_client(b, 1);
      sd_bus_start(b);
      sd_bus_error err = SD_BUS_ERROR_NULL;
      sd_bus_message* reply = nullptr;
      const int r = sd_bus_call_method(b, kStatusBusName, kStatusObjectPath, kStatusInterface, "GetClaim", &err,
                                       &reply, "s", uid);
      std::pair<std::string, ClaimStatus> out;
      if (r < 0) {
        out.first = std::string(err.name ? err.name : "") + ": " + (err.message ? err.message : "");
      } else {
        auto m = nvdra::systemd_bus::Message::adopt(reply);
        reply = nullptr;
        auto c = decode_claim(m);
        if (c) out.second = *c;
        else out.first = c.error().message;
      }
      sd_bus_error_free(&err);
      sd_bus_message_unref(reply);
      sd_bus_flush_close_unref(b);
      return out;
    });
  };
  const auto known = call("0b6e1c2a-0000-4000-8000-000000000001");
  EXPECT_EQ(known.first, "");
  EXPECT_EQ(known.second, nvdra::test::sample_snapshot().claims[0]);
  const auto unknown = call("no-such-uid");
  EXPECT_EQ(unknown.first,
            "io.nvdra.Agent1.Error.NotFound: no prepared claim with uid \"no-such-uid\" on this node");
}

TEST_F(ServiceOnPrivateBus, ClientSaysTheAgentIsNotRunningWhenNobodyOwnsTheName) {
  stop_.emit(asio::cancellation_type::all);
  ASSERT_TRUE(run_until(io_, [this] { return ended_; }));
  auto got = blocking([this] { return nvdra::ctl::fetch_status({bus_.address(), 5000}); });
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.error().code, nvdra::ErrorCode::kUnavailable);
  EXPECT_NE(got.error().message.find("the nvdra agent is not running"), std::string::npos) << got.error().message;
  // TearDown emits again: harmless once the task has ended.
}

TEST_F(ServiceOnPrivateBus, AHealthChangeSendsOneDeviceHealthChangedSignalWithTheNewRow) {
  std::atomic<bool> listening{false};
  std::atomic<bool> finished{false};
  std::vector<std::vector<std::string>> got;
  std::thread client([&] {
    sd_bus* b = nullptr;
    sd_bus_new(&b);
    sd_bus_set_address(b, bus_.address().c_str());
    sd_bus_set_bus_client(b, 1);
    sd_bus_start(b);
    const std::string rule = std::string("type='signal',interface='") + kStatusInterface + "',member='" +
                             kDeviceHealthChangedSignal + "'";
    // AddMatch is a synchronous call: once it returns, the bus routes the signal to us.
    if (sd_bus_add_match(b, nullptr, rule.c_str(), nullptr, nullptr) >= 0) {
      listening.store(true, std::memory_order_release);
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (got.empty() && std::chrono::steady_clock::now() < deadline) {
        sd_bus_message* m = nullptr;
        if (sd_bus_process(b, &m) > 0) {
          if (m != nullptr && sd_bus_message_is_signal(m, kStatusInterface, kDeviceHealthChangedSignal) > 0) {
            const char* f[5] = {};
            if (sd_bus_message_read(m, "sssss", &f[0], &f[1], &f[2], &f[3], &f[4]) >= 0)
              got.push_back({f[0], f[1], f[2], f[3], f[4]});
          }
          sd_bus_message_unref(m);
          continue;
        }
        sd_bus_wait(b, 100000);
      }
    }
    sd_bus_flush_close_unref(b);
    finished.store(true, std::memory_order_release);
  });
  EXPECT_TRUE(run_until(io_, [&] { return listening.load(std::memory_order_acquire) ||
                                          finished.load(std::memory_order_acquire); }));
  auto snap = nvdra::test::sample_snapshot();
  snap.devices[0].health = kHealthUnhealthy;
  snap.devices[0].last_xid = "79";
  snap.devices[0].last_xid_time = "2026-11-24T10:00:00Z";
  snap.claims.clear();  // a change elsewhere sends no DeviceHealthChanged
  service_.update(snap);
  EXPECT_TRUE(run_until(io_, [&] { return finished.load(std::memory_order_acquire); }));
  client.join();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0], (std::vector<std::string>{"gpu.nvidia.com", "gpu-0", "unhealthy", "79", "2026-11-24T10:00:00Z"}));
}

TEST(StatusCodec, HealthChangesListOnlyDevicesPresentInBothWhoseHealthOrXidDiffers) {
  const auto a = nvdra::test::sample_snapshot();
  auto b = a;
  EXPECT_TRUE(health_changes(a, b).empty());
  b.devices[0].last_xid = "48";
  b.devices[1].type = "gpu";  // not a health field
  b.devices.push_back({"gpu.nvidia.com", "gpu-9", "gpu", "GPU-9", "unhealthy"});  // new: no signal
  const auto changed = health_changes(a, b);
  ASSERT_EQ(changed.size(), 1u);
  EXPECT_EQ(changed[0].name, "gpu-0");
  EXPECT_EQ(changed[0].last_xid, "48");
}

TEST(StatusCodec, ChangedPropertiesListsOnlyWhatDiffers) {
  const auto a = nvdra::test::sample_snapshot();
  auto b = a;
  EXPECT_TRUE(changed_properties(a, b).empty());
  b.drivers[1].registration = kRegistrationFailed;
  b.imex.sub_state = "dead";
  b.last_errors.push_back({1, "imex", "nvidia-imex.service stopped"});
  const auto changed = changed_properties(a, b);
  ASSERT_EQ(changed.size(), 3u);
  EXPECT_STREQ(changed[0], "Drivers");
  EXPECT_STREQ(changed[1], "ImexSubState");
  EXPECT_STREQ(changed[2], "LastErrors");
}

TEST(StatusCodec, EveryPropertyHasADistinctNameAndASignature) {
  std::set<std::string> names;
  for (const auto& p : status_properties()) {
    EXPECT_TRUE(names.insert(p.name).second) << p.name;
    EXPECT_NE(std::string(p.signature), "");
  }
  EXPECT_EQ(names.size(), 13u);
}
