// The page Metrics renders: upstream's nvidia_dra_* exactly (names, [ALPHA] help, labels, buckets,
// zero series at start), the nvdra_* series the events move, and the process series.
#include "agent/metrics/metrics.hpp"

#include <gtest/gtest.h>

#include <ctime>

#include <algorithm>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace nvdra::metrics {
namespace {

const std::string kGpu = "gpu.nvidia.com";

// {"name{labels}": "value"} of every sample line.
std::map<std::string, std::string> samples(const std::string& page) {
  std::map<std::string, std::string> out;
  std::istringstream in(page);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    const auto space = line.rfind(' ');
    out[line.substr(0, space)] = line.substr(space + 1);
  }
  return out;
}

TEST(Metrics, UpstreamFamiliesHaveTheirNamesHelpAndType) {
  Metrics m("node-a", "1.2.3", {kGpu});
  const auto page = m.render();
  for (const char* block : {
           "# HELP nvidia_dra_requests_total [ALPHA] Total number of DRA prepare and unprepare requests.\n"
           "# TYPE nvidia_dra_requests_total counter\n",
           "# HELP nvidia_dra_request_duration_seconds [ALPHA] Duration of DRA prepare and unprepare requests.\n"
           "# TYPE nvidia_dra_request_duration_seconds histogram\n",
           "# HELP nvidia_dra_requests_inflight [ALPHA] Number of in-flight DRA prepare and unprepare requests.\n"
           "# TYPE nvidia_dra_requests_inflight gauge\n",
       })
    EXPECT_NE(page.find(block), std::string::npos) << block << "\n" << page;
}

TEST(Metrics, RequestSeriesOfEveryDriverExistAtZeroFromTheStart) {
  Metrics m("node-a", "1.2.3", {kGpu, "compute-domain.nvidia.com"});
  const auto s = samples(m.render());
  for (const std::string driver : {"gpu.nvidia.com", "compute-domain.nvidia.com"})
    for (const std::string op : {"prepare", "unprepare"}) {
      const std::string l = "driver=\"" + driver + "\",operation=\"" + op + "\"";
      EXPECT_EQ(s.at("nvidia_dra_requests_total{" + l + "}"), "0");
      EXPECT_EQ(s.at("nvidia_dra_requests_inflight{" + l + "}"), "0");
      EXPECT_EQ(s.at("nvidia_dra_request_duration_seconds_count{" + l + "}"), "0");
      for (const char* le : {"0.05", "0.1", "0.2", "0.4", "0.8", "1.6", "3.2", "6.4", "12.8", "+Inf"})
        EXPECT_EQ(s.at("nvidia_dra_request_duration_seconds_bucket{" + l + ",le=\"" + le + "\"}"), "0") << le;
    }
  // Error families have no series until an error happens, and then no empty HELP block either.
  EXPECT_EQ(m.render().find("nvidia_dra_node_prepare_errors_total"), std::string::npos);
  EXPECT_EQ(s.at("nvdra_build_info{version=\"1.2.3\"}"), "1");
}

TEST(Metrics, FinishedRequestsCountSuccessesDurationsAndErrorsByType) {
  Metrics m("node-a", "v", {kGpu});
  m.request_started(kGpu, Operation::kPrepare);
  m.request_started(kGpu, Operation::kPrepare);
  auto s = samples(m.render());
  EXPECT_EQ(s.at("nvidia_dra_requests_inflight{driver=\"gpu.nvidia.com\",operation=\"prepare\"}"), "2");
  m.request_finished(kGpu, Operation::kPrepare, 0.07, "");
  m.request_finished(kGpu, Operation::kPrepare, 0.3, kErrorPrepareDevices);
  s = samples(m.render());
  const std::string l = "driver=\"gpu.nvidia.com\",operation=\"prepare\"";
  EXPECT_EQ(s.at("nvidia_dra_requests_inflight{" + l + "}"), "0");
  EXPECT_EQ(s.at("nvidia_dra_requests_total{" + l + "}"), "1");  // successes only, as upstream
  EXPECT_EQ(s.at("nvidia_dra_request_duration_seconds_count{" + l + "}"), "2");
  EXPECT_EQ(s.at("nvidia_dra_request_duration_seconds_bucket{" + l + ",le=\"0.05\"}"), "0");
  EXPECT_EQ(s.at("nvidia_dra_request_duration_seconds_bucket{" + l + ",le=\"0.1\"}"), "1");
  EXPECT_EQ(s.at("nvidia_dra_request_duration_seconds_bucket{" + l + ",le=\"0.4\"}"), "2");
  EXPECT_EQ(s.at("nvidia_dra_node_prepare_errors_total{driver=\"gpu.nvidia.com\",error_type=\"prepare_devices\"}"),
            "1");
  EXPECT_EQ(s.count("nvidia_dra_node_unprepare_errors_total{driver=\"gpu.nvidia.com\",error_type=\"prepare_devices\"}"),
            0u);
}

TEST(Metrics, PreparedDevicesByTypeDropToZeroWhenGone) {
  Metrics m("node-a", "v", {kGpu});
  m.set_prepared_devices(kGpu, {{"gpu", 2}, {"mig", 1}});
  auto s = samples(m.render());
  EXPECT_EQ(s.at("nvidia_dra_prepared_devices{device_type=\"gpu\",driver=\"gpu.nvidia.com\",node=\"node-a\"}"), "2");
  EXPECT_EQ(s.at("nvidia_dra_prepared_devices{device_type=\"mig\",driver=\"gpu.nvidia.com\",node=\"node-a\"}"), "1");
  m.set_prepared_devices(kGpu, {{"gpu", 1}});
  s = samples(m.render());
  EXPECT_EQ(s.at("nvidia_dra_prepared_devices{device_type=\"gpu\",driver=\"gpu.nvidia.com\",node=\"node-a\"}"), "1");
  EXPECT_EQ(s.at("nvidia_dra_prepared_devices{device_type=\"mig\",driver=\"gpu.nvidia.com\",node=\"node-a\"}"), "0");
  EXPECT_NE(m.render().find("# HELP nvidia_dra_prepared_devices [ALPHA] Current number of prepared devices by device "
                            "type.\n# TYPE nvidia_dra_prepared_devices gauge\n"),
            std::string::npos);
}

TEST(Metrics, SinkEventsMoveTheNvdraSeries) {
  Metrics m("node-a", "v", {kGpu});
  Sink& sink = m;
  sink.api_request("get", 200);
  sink.api_request("get", 200);
  sink.api_request("create", 0);
  sink.watch_restart("resourceclaims");
  sink.slice_write("create", true);
  sink.slice_write("update", false);
  sink.checkpoint_save(kGpu);
  sink.checkpoint_fsync(kGpu);
  sink.checkpoint_fsync(kGpu);
  sink.mig_device_created();
  sink.mig_device_destroyed();
  sink.mig_device_destroyed();
  m.set_mps_daemons(kGpu, 3);
  const auto s = samples(m.render());
  EXPECT_EQ(s.at("nvdra_api_requests_total{code=\"200\",verb=\"get\"}"), "2");
  EXPECT_EQ(s.at("nvdra_api_requests_total{code=\"<error>\",verb=\"create\"}"), "1");
  EXPECT_EQ(s.at("nvdra_api_watch_restarts_total{resource=\"resourceclaims\"}"), "1");
  EXPECT_EQ(s.at("nvdra_resource_slice_writes_total{operation=\"create\",result=\"success\"}"), "1");
  EXPECT_EQ(s.at("nvdra_resource_slice_writes_total{operation=\"update\",result=\"error\"}"), "1");
  EXPECT_EQ(s.at("nvdra_checkpoint_saves_total{driver=\"gpu.nvidia.com\"}"), "1");
  EXPECT_EQ(s.at("nvdra_checkpoint_fsyncs_total{driver=\"gpu.nvidia.com\"}"), "2");
  EXPECT_EQ(s.at("nvdra_mig_devices_created_total"), "1");
  EXPECT_EQ(s.at("nvdra_mig_devices_destroyed_total"), "2");
  EXPECT_EQ(s.at("nvdra_mps_control_daemons{driver=\"gpu.nvidia.com\"}"), "3");
}

TEST(Metrics, FabricPartitionCallsAreCountedTimedAndTheHeldOnesGauged) {
  Metrics m("node-a", "v", {kGpu});
  EXPECT_EQ(samples(m.render()).count("nvdra_fabric_partitions_active"), 0u);  // no FM, no series
  Sink& sink = m;
  sink.fabric_partition_call("activate", true, 0.002);
  sink.fabric_partition_call("activate", false, 0.001);
  sink.fabric_partition_call("deactivate", true, 0.003);
  sink.fabric_partitions_active(2);
  const auto s = samples(m.render());
  EXPECT_EQ(s.at("nvdra_fabric_partition_calls_total{operation=\"activate\",result=\"ok\"}"), "1");
  EXPECT_EQ(s.at("nvdra_fabric_partition_calls_total{operation=\"activate\",result=\"error\"}"), "1");
  EXPECT_EQ(s.at("nvdra_fabric_partition_call_duration_seconds_count{operation=\"activate\"}"), "2");
  EXPECT_EQ(s.at("nvdra_fabric_partition_call_duration_seconds_count{operation=\"deactivate\"}"), "1");
  EXPECT_EQ(s.at("nvdra_fabric_partitions_active"), "2");
}

TEST(Metrics, ImexUnitStateIsAStateSet) {
  Metrics m("node-a", "v", {});
  m.set_imex_unit("nvidia-imex.service", "unknown");
  auto s = samples(m.render());
  EXPECT_EQ(s.at("nvdra_imex_unit_state{state=\"unknown\",unit=\"nvidia-imex.service\"}"), "1");
  EXPECT_EQ(s.at("nvdra_imex_unit_state{state=\"active\",unit=\"nvidia-imex.service\"}"), "0");
  m.set_imex_unit("nvidia-imex.service", "active");
  s = samples(m.render());
  EXPECT_EQ(s.at("nvdra_imex_unit_state{state=\"unknown\",unit=\"nvidia-imex.service\"}"), "0");
  EXPECT_EQ(s.at("nvdra_imex_unit_state{state=\"active\",unit=\"nvidia-imex.service\"}"), "1");
  m.set_imex_unit("nvidia-imex.service", "maintenance");  // a state systemd may add later: unknown
  s = samples(m.render());
  EXPECT_EQ(s.at("nvdra_imex_unit_state{state=\"unknown\",unit=\"nvidia-imex.service\"}"), "1");
  EXPECT_EQ(s.at("nvdra_imex_unit_state{state=\"active\",unit=\"nvidia-imex.service\"}"), "0");
}

TEST(Metrics, ScrapesAreCountedAsPromhttpDoes) {
  Metrics m("node-a", "v", {});
  auto s = samples(m.render());
  for (const char* code : {"200", "500", "503"})
    EXPECT_EQ(s.at(std::string("promhttp_metric_handler_requests_total{code=\"") + code + "\"}"), "0");
  m.scrape_started();
  s = samples(m.render());
  EXPECT_EQ(s.at("promhttp_metric_handler_requests_in_flight"), "1");
  m.scrape_finished(200);
  s = samples(m.render());
  EXPECT_EQ(s.at("promhttp_metric_handler_requests_in_flight"), "0");
  EXPECT_EQ(s.at("promhttp_metric_handler_requests_total{code=\"200\"}"), "1");
}

TEST(Metrics, FamiliesAreOrderedByNameAndSeriesByLabelsAsGoDoes) {
  Metrics m("node-a", "v", {kGpu, "compute-domain.nvidia.com"});
  m.api_request("list", 200);
  const auto page = m.render();
  std::vector<std::string> names, series;
  std::istringstream in(page);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("# TYPE ", 0) == 0) names.push_back(line.substr(7, line.find(' ', 7) - 7));
    if (line.rfind("nvidia_dra_requests_total{", 0) == 0) series.push_back(line);
  }
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  EXPECT_EQ(series, (std::vector<std::string>{
                        "nvidia_dra_requests_total{driver=\"compute-domain.nvidia.com\",operation=\"prepare\"} 0",
                        "nvidia_dra_requests_total{driver=\"compute-domain.nvidia.com\",operation=\"unprepare\"} 0",
                        "nvidia_dra_requests_total{driver=\"gpu.nvidia.com\",operation=\"prepare\"} 0",
                        "nvidia_dra_requests_total{driver=\"gpu.nvidia.com\",operation=\"unprepare\"} 0"}));
}

TEST(Metrics, PageEndsWithTheProcessSeries) {
  Metrics m("node-a", "v", {});
  const auto s = samples(m.render());
  for (const char* name : {"process_resident_memory_bytes", "process_virtual_memory_bytes", "process_open_fds",
                           "process_max_fds", "process_start_time_seconds"})
    EXPECT_GT(std::stod(s.at(name)), 0) << name;
}

// The CPU counter follows the CPU this process used (>= 0 alone could not fail).
TEST(Metrics, ProcessCpuSecondsCountsTheCpuUsed) {
  const auto cpu_now = [] {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
  };
  while (cpu_now() < 0.2) {
  }  // ends: the loop itself uses the CPU it waits for
  Metrics m("node-a", "v", {});
  // /proc/self/stat counts in clock ticks (1/100 s): allow a few ticks of rounding.
  EXPECT_GE(std::stod(samples(m.render()).at("process_cpu_seconds_total")), 0.15);
}

}  // namespace
}  // namespace nvdra::metrics
