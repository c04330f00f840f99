#pragma once
// The PciBinder seam's test implementation: a kernel in memory. unbind/override/probe act at once
// (as Linux does on the write); a function in `refused` ignores them; holders per minor are what
// the test says. Thread-safe (the step calls it from the worker pool).
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>

#include "agent/claims/vfio/pci_binder.hpp"

namespace nvdra::claims::testing {

class FakePciBinder final : public PciBinder {
 public:
  std::map<std::string, std::string> drivers;        // address -> bound driver ("" none)
  std::map<std::string, std::string> defaults;       // address -> driver drivers_probe picks without override
  std::map<std::string, std::string> overrides;
  std::map<unsigned, std::vector<GpuHolder>> busy;   // minor -> holders
  std::set<std::string> refused;
  std::vector<std::string> log;                       // "unbind 0000:…", "override 0000:… vfio-pci", "probe …"
  std::function<void(const std::string& entry)> on_write;  // called with each unbind and override as it is made
  std::mutex mu;

  Result<std::string> driver(const std::string& a) override {
    std::lock_guard lock(mu);
    auto it = drivers.find(a);
    if (it == drivers.end()) return make_error(ErrorCode::kNotFound, "no PCI function " + a);
    return it->second;
  }
  Status unbind(const std::string& a, const std::string& d) override {
    std::lock_guard lock(mu);
    log.push_back("unbind " + a + " " + d);
    if (on_write) on_write(log.back());
    if (!refused.count(a) && drivers[a] == d) drivers[a] = "";
    return {};
  }
  Status set_override(const std::string& a, const std::string& d) override {
    std::lock_guard lock(mu);
    log.push_back("override " + a + " " + d);
    if (on_write) on_write(log.back());
    overrides[a] = d;
    return {};
  }
  Status probe(const std::string& a) override {
    std::lock_guard lock(mu);
    log.push_back("probe " + a);
    if (!refused.count(a) && drivers[a].empty()) drivers[a] = overrides[a].empty() ? defaults[a] : overrides[a];
    return {};
  }
  std::optional<Error> blind;  // set: holders() cannot see the host's processes
  Result<std::vector<GpuHolder>> holders(unsigned minor) override {
    std::lock_guard lock(mu);
    ++holder_reads;
    if (blind) return *blind;
    return busy[minor];
  }
  std::set<unsigned> self_held;  // minors this process itself has open (its NVML session)
  bool self_holds(unsigned minor) override {
    std::lock_guard lock(mu);
    return self_held.count(minor) > 0;
  }
  std::string iommufd_cdev(const std::string& a) override {
    std::lock_guard lock(mu);
    ++cdev_reads;
    if (cdev_late > 0) {  // the cdev registered only after this many more reads (vfio-pci's probe)
      --cdev_late;
      return "";
    }
    return drivers[a] == "vfio-pci" ? "vfio7" : "";
  }
  int cdev_late = 0;
  int holder_reads = 0;
  int cdev_reads = 0;
};

}  // namespace nvdra::claims::testing
