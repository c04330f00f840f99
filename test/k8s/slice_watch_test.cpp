// SliceWatch: both drivers' publishers on one watch of the node's slices, each keeping to its own,
// and the watch living on when the publisher that ran it stops.
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>

#include "k8s/slice_watch.hpp"
#include "test/k8s/publisher_fixture.hpp"

namespace nvdra::k8s::testing {
namespace {

constexpr const char* kGpu = "gpu.nvidia.com";
constexpr const char* kCd = "compute-domain.nvidia.com";

DriverResources channels() {
  DriverResources r;
  PublishedDevice d;
  d.name = "channel-0";
  d.attributes["type"] = std::string("channel");
  r.devices.push_back(std::move(d));
  return r;
}

// The field selectors of the ResourceSlice watches opened so far, from the double's request log.
awaitable<std::vector<std::string>> slice_watches(Admin& admin) {
  auto log = co_await admin.get(std::string("/admin/requests"));
  std::vector<std::string> out;
  for (const auto& r : log.as_array()) {
    const auto& entry = r.as_object();
    const auto& query = entry.at("query").as_object();
    const auto* watch = query.if_contains("watch");
    if (!entry.at("path").as_string().ends_with("/resourceslices") || !watch ||
        (watch->as_string() != "1" && watch->as_string() != "true"))
      continue;
    const auto* selector = query.if_contains("fieldSelector");
    out.emplace_back(selector ? std::string(selector->as_string()) : std::string());
  }
  co_return out;
}

// Spawns `publisher.run()` stoppable through `stop`; `ended` counts the runs that have returned.
void spawn(asio::io_context& io, SlicePublisher& publisher, asio::cancellation_signal& stop, int& ended,
           ChangeSignal& changed) {
  asio::co_spawn(io, publisher.run(), asio::bind_cancellation_slot(stop.slot(), [&](std::exception_ptr) {
                   ++ended;
                   changed.notify();
                 }));
}

TEST_F(DoubleTest, BothDriversShareOneWatchAndEachKeepsToItsOwnSlices) {
  auto api = make_api();
  Admin admin(io_.get_executor(), double_->client_config());
  run([&]() -> awaitable<void> {
    auto watch = std::make_shared<SliceWatch>(io_.get_executor(), api, SliceWatchOptions{"node1"});
    EXPECT_EQ(watch->field_selector(), "spec.nodeName=node1");
    auto gpu = make_publisher(api, kGpu, watch);
    auto cd = make_publisher(api, kCd, watch);
    ConvergenceCounter gpu_done(*gpu, io_.get_executor()), cd_done(*cd, io_.get_executor());
    gpu->set_desired(make_gpus(2));
    cd->set_desired(channels());
    asio::cancellation_signal stop_gpu, stop_cd;
    int ended = 0;
    ChangeSignal changed(io_.get_executor());
    spawn(io_, *gpu, stop_gpu, ended, changed);  // first: it runs the watch
    spawn(io_, *cd, stop_cd, ended, changed);
    co_await gpu_done.wait_for(1);
    co_await cd_done.wait_for(1);
    co_await wait_for_open_watch(admin);  // the WATCH follows the LIST the publishers converged on
    EXPECT_EQ(co_await slice_watches(admin), std::vector<std::string>{"spec.nodeName=node1"});
    EXPECT_EQ((co_await stored(*api, kGpu)).size(), 1u);  // neither took the other's slice for stale
    EXPECT_EQ((co_await stored(*api, kCd)).size(), 1u);

    // The driver that ran the watch stops; the other takes it over and still sees kubelet's wipe.
    stop_gpu.emit(asio::cancellation_type::terminal);
    while (ended < 1) co_await changed.wait();
    co_await wipe_node_slices(admin);
    co_await cd_done.wait_for(2);
    EXPECT_EQ((co_await stored(*api, kCd)).size(), 1u);
    EXPECT_TRUE((co_await stored(*api, kGpu)).empty()) << "the stopped driver's slices are not anyone else's";

    stop_cd.emit(asio::cancellation_type::terminal);
    while (ended < 2) co_await changed.wait();
  });
}

TEST(SliceWatchDriverOf, ReadsSpecDriverEvenFromASliceThatDoesNotDecode) {
  EXPECT_EQ(SliceWatch::driver_of(R"({"spec":{"driver":"gpu.nvidia.com","devices":"not a list"}})"), kGpu);
  EXPECT_EQ(SliceWatch::driver_of(R"({"spec":{}})"), "");
  EXPECT_EQ(SliceWatch::driver_of("not json"), "");
}

}  // namespace
}  // namespace nvdra::k8s::testing
