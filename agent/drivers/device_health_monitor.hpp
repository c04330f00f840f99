#pragma once
// DeviceHealthMonitor — gpu.nvidia.com's HealthSource under NVMLDeviceHealthCheck: one NVML event
// set over the node's GPUs, waited on from the WorkerPool with a bounded wait (so cancellation and
// shutdown take at most kWaitSlice), each outcome applied to DeviceHealth on the io_context thread.
// A change bumps the generation: the health streams and the slice publisher follow it.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <set>

#include "agent/drivers/device_health.hpp"
#include "agent/kubelet/health_source.hpp"

namespace nvdra::runtime { class WorkerPool; }
namespace nvdra::metrics { class Sink; }

namespace nvdra::drivers {

class DeviceHealthMonitor final : public kubelet::HealthSource {
 public:
  // Short enough that SIGTERM never waits long on NVML (which cannot be interrupted), long enough
  // that an idle node wakes only ten times a second.
  static constexpr std::chrono::milliseconds kWaitSlice{100};

  DeviceHealthMonitor(boost::asio::any_io_executor ex, runtime::WorkerPool& workers, nvml::GpuLibrary& library,
                      const nvml::DeviceModel& model, DeviceHealth health, metrics::Sink& sink);

  // Registers the events and follows them; ends only by cancellation (or when registration fails
  // as a whole: every device is then unmonitored and stays so).
  boost::asio::awaitable<void> run();

  kubelet::HealthSnapshot snapshot() const override;
  boost::asio::awaitable<kubelet::HealthSnapshot> watch(uint64_t after) override;

  std::vector<DeviceTaint> taints(const std::string& device) const { return health_.taints(device); }
  void fill(systemd_bus::DeviceStatus& row) const { health_.fill(row); }

 private:
  void changed();
  void count_devices();  // the nvdra_devices gauge
  void log_event(const nvml::GpuEvent& e, std::optional<unsigned> action) const;
  void count_event(const nvml::GpuEvent& e);
  // The recovery action of a GPU, read on the pool; nullopt when NVML cannot say or fails (logged).
  boost::asio::awaitable<std::optional<unsigned>> read_recovery_action(const std::string& gpu_uuid);
  // Reads the action of every GPU awaiting recovery; true when taints went.
  boost::asio::awaitable<bool> follow_recovery(int64_t now);
  void recovered(const std::string& gpu_uuid, const char* reason);
  bool served(int64_t now);
  boost::asio::awaitable<void> unwatched(const std::vector<std::string>& uuids, const Error& why);  // DeviceHealth::served, each recovered GPU logged and counted
  boost::asio::any_io_executor ex_;
  runtime::WorkerPool& workers_;
  nvml::GpuLibrary& library_;
  const nvml::DeviceModel& model_;
  DeviceHealth health_;
  metrics::Sink& sink_;
  uint64_t generation_ = 1;
  std::set<boost::asio::steady_timer*> waiters_;
};

}  // namespace nvdra::drivers
