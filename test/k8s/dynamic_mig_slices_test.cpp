// DynamicMIG slices of the hgx-h100 and dgx-a100 mock machines, published through the real
// SlicePublisher to the API-server double, which validates them against the real OpenAPI and the
// per-slice limits of 1.35 (counters in their own slice) and 1.34 (counters with their devices).
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/json/serialize.hpp>

#include <algorithm>
#include <set>

#include "nvml/discovery.hpp"
#include "nvml/partitions.hpp"
#include "test/k8s/publisher_fixture.hpp"
#include "test/nvml/mock_nvml.hpp"

namespace nvdra::k8s::testing {
namespace {

using namespace asio::experimental::awaitable_operators;

DriverResources dynamic_mig_resources(const std::string& profile) {
  nvml::testing::MockNvml mock(profile);
  auto lib = mock.open();
  auto model = nvml::discover(*lib);
  if (!model) throw std::runtime_error(model.error().describe());
  return nvml::published_gpu_resources(*model, true);
}

struct Case {
  std::string profile;
  std::size_t counter_sets;
  std::size_t devices;
};

class DynamicMig135 : public DoubleTest, public ::testing::WithParamInterface<Case> {};
class DynamicMig134 : public DoubleTest, public ::testing::WithParamInterface<Case> {
 protected:
  std::vector<std::string> double_args() const override { return {"--version", "1.34"}; }
};

void expect_all_published(const std::vector<SliceObject>& slices, const DriverResources& desired) {
  std::set<std::string> devices, sets;
  for (const auto& s : slices) {
    for (const auto& d : s.content.devices) devices.insert(d.name);
    for (const auto& c : s.content.shared_counters) sets.insert(c.name);
    EXPECT_EQ(s.resource_slice_count, static_cast<int64_t>(slices.size()));
  }
  EXPECT_EQ(devices.size(), desired.devices.size());
  EXPECT_EQ(sets.size(), desired.shared_counters.size());
}

// "gpu-3" of "gpu-3" and "gpu-3-mig-1g10gb-19-0".
std::string gpu_of(const std::string& device) { return device.substr(0, device.find('-', 4)); }

// Upstream's layout (upstream-driver.md §1.1): after the counter slices (1.35+), one slice per physical
// GPU holding all its devices, the GPUs in the order published (PCI bus id).
void expect_one_slice_per_gpu(std::vector<SliceObject> slices, const DriverResources& desired) {
  std::sort(slices.begin(), slices.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  std::vector<std::string> want, got;
  for (const auto& d : desired.devices)
    if (std::find(want.begin(), want.end(), gpu_of(d.name)) == want.end()) want.push_back(gpu_of(d.name));
  for (const auto& s : slices) {
    if (s.content.devices.empty()) continue;
    got.push_back(gpu_of(s.content.devices.front().name));
    for (const auto& d : s.content.devices) EXPECT_EQ(gpu_of(d.name), got.back()) << s.name;
  }
  EXPECT_EQ(got, want);
}

TEST_P(DynamicMig135, CountersOnlySlicesThenDeviceSlicesOfAtMost64AreAccepted) {
  const auto desired = dynamic_mig_resources(GetParam().profile);
  ASSERT_EQ(desired.shared_counters.size(), GetParam().counter_sets);
  ASSERT_EQ(desired.devices.size(), GetParam().devices);
  auto api = make_api();
  auto publisher = make_publisher(api);
  Admin admin(io_.get_executor(), double_->client_config());
  run([&]() -> awaitable<void> {
    publisher->set_desired(desired);
    co_await (publisher->run() || publisher->wait_converged());
    auto slices = co_await stored(*api);
    auto rejections = co_await admin.get("/admin/rejections");
    EXPECT_TRUE(rejections.as_array().empty()) << boost::json::serialize(rejections);
    expect_all_published(slices, desired);
    for (const auto& s : slices) {
      EXPECT_TRUE(s.content.devices.empty() || s.content.shared_counters.empty());  // 1.35 either-or
      EXPECT_LE(s.content.shared_counters.size(), 8u);
      EXPECT_LE(s.content.devices.size(), 64u);
    }
    expect_one_slice_per_gpu(slices, desired);
    std::sort(slices.begin(), slices.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
    CO_ASSERT_TRUE(!slices.empty());
    EXPECT_EQ(slices.front().content.shared_counters, desired.shared_counters);  // slice #0: every set, in order
  });
}

TEST_P(DynamicMig134, EachGpuSliceCarriesItsCounterSetAndIsAccepted) {
  const auto desired = dynamic_mig_resources(GetParam().profile);
  auto api = make_api();
  auto publisher = make_publisher(api);
  Admin admin(io_.get_executor(), double_->client_config());
  run([&]() -> awaitable<void> {
    publisher->set_desired(desired);
    co_await (publisher->run() || publisher->wait_converged());
    CO_ASSERT_TRUE(publisher->server_version().has_value());
    EXPECT_EQ(publisher->server_version()->minor, 34);
    auto slices = co_await stored(*api);
    auto rejections = co_await admin.get("/admin/rejections");
    EXPECT_TRUE(rejections.as_array().empty()) << boost::json::serialize(rejections);
    expect_all_published(slices, desired);
    for (const auto& s : slices) {
      EXPECT_LE(s.content.devices.size(), 128u);
      std::size_t counters = 0, consumed = 0;
      std::set<std::string> sets;
      for (const auto& c : s.content.shared_counters) {
        counters += c.counters.size();
        sets.insert(c.name);
      }
      EXPECT_LE(counters, 32u);  // summed over the slice's sets (1.34)
      for (const auto& d : s.content.devices)
        for (const auto& use : d.consumes_counters) {
          EXPECT_TRUE(sets.count(use.counter_set)) << d.name << " consumes from a set outside its slice";
          consumed += use.counters.size();
        }
      EXPECT_LE(consumed, 1024u);
    }
    expect_one_slice_per_gpu(slices, desired);
  });
}

const Case kCases[] = {{"hgx-h100", 8, 8 * 26}, {"dgx-a100", 2, 6 + 2 * 25}};
std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  std::string n = info.param.profile;
  std::replace(n.begin(), n.end(), '-', '_');
  return n;
}
INSTANTIATE_TEST_SUITE_P(Profiles, DynamicMig135, ::testing::ValuesIn(kCases), case_name);
INSTANTIATE_TEST_SUITE_P(Profiles, DynamicMig134, ::testing::ValuesIn(kCases), case_name);

}  // namespace
}  // namespace nvdra::k8s::testing
