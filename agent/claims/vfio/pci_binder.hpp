#pragma once
// PciBinder — the seam to the kernel's PCI driver binding (sysfs): which driver holds a function,
// unbind, driver_override, drivers_probe, and which host processes hold a GPU's device node.
// SysfsPciBinder writes the real files under <host root>/sys (on the simulated host they are the
// fake kernel's, test/lib/fake_pci.py); tests may put their own behind the interface. Every call
// blocks: run it on the WorkerPool. Thread-safe (no state).
#include <memory>
#include <string>
#include <vector>

#include "agent/base/result.hpp"

namespace nvdra::claims {

// A host process with /dev/nvidia<minor> open.
struct GpuHolder {
  long pid = 0;
  std::string command;  // /proc/<pid>/comm
};

class PciBinder {
 public:
  virtual ~PciBinder() = default;
  // The driver bound to the function ("" when none).
  virtual Result<std::string> driver(const std::string& address) = 0;
  virtual Status unbind(const std::string& address, const std::string& driver) = 0;
  // driver_override; "" clears it (the function's default driver applies again).
  virtual Status set_override(const std::string& address, const std::string& driver) = 0;
  // drivers_probe: the kernel binds the override, else the default driver.
  virtual Status probe(const std::string& address) = 0;
  // The processes holding /dev/nvidia<minor>, by pid; never this agent itself (self_holds says that).
  // An error (kFailedPrecondition) when the agent cannot see them all: <host root>/proc unreadable or
  // not the host's process list (no kernel threads: a container's pid namespace), or a process's
  // fd directory it may not read. "No holders" is then never guessed (issue #30).
  virtual Result<std::vector<GpuHolder>> holders(unsigned minor) = 0;
  // Whether this process has /dev/nvidia<minor> open (its NVML session attaches every GPU it asks
  // about): the nvidia driver's unbind waits for every open file of the GPU, its own included.
  virtual bool self_holds(unsigned minor) = 0;
  // The iommufd character device of a function bound to vfio-pci ("vfio3"), "" when none.
  virtual std::string iommufd_cdev(const std::string& address) = 0;
};

std::unique_ptr<PciBinder> make_sysfs_pci_binder(std::string host_root);

}  // namespace nvdra::claims
