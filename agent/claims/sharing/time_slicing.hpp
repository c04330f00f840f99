#pragma once
// nvidia-smi as upstream's gpu plugin runs it for sharing (../shared/reference/upstream-driver.md
// §4.1, §4.2): the compute-policy time slice and the compute mode of full GPUs. Blocking (exec):
// call on the WorkerPool. Errors carry nvidia-smi's stderr; the caller adds the claim.
#include <string>
#include <vector>

#include "agent/base/result.hpp"

namespace nvdra::claims {

// Time-slice value that restores the driver's default (upstream's reset at unprepare).
inline constexpr int kDefaultTimeSlice = 0;

class NvidiaSmi {
 public:
  // driver_root: the directory the driver is installed under, as seen by the agent ("/" on a host,
  // "/driver-root" in upstream's container).
  explicit NvidiaSmi(std::string driver_root) : driver_root_(std::move(driver_root)) {}

  // The first regular file named nvidia-smi under the driver root in /, /opt/bin, /usr/bin,
  // /usr/sbin, /bin, /sbin (upstream's search); kNotFound naming every path tried.
  Result<std::string> locate() const;

  // For each UUID (sorted): `-i <UUID> -c DEFAULT`, then for each:
  // `compute-policy -i <UUID> --set-timeslice <value>`. value 0..3 (Default..Long).
  Status set_time_slice(std::vector<std::string> gpu_uuids, int value) const;

  // `-i <UUID> -c <mode>` for each UUID: EXCLUSIVE_PROCESS before an MPS daemon, DEFAULT after.
  Status set_compute_mode(std::vector<std::string> gpu_uuids, const std::string& mode) const;

  // `-i <PCI address> -pm 0|1`: with nvidia-persistenced running, nvidia-smi asks it to let go of the
  // GPU (NVML's own call would only clear the driver's legacy flag), as upstream's VFIO prepare does.
  Status set_persistence_mode(const std::string& pci_address, bool enabled) const;

 private:
  Status run(const std::string& smi, std::vector<std::string> args) const;
  std::vector<std::string> env() const;
  std::string driver_root_;
};

}  // namespace nvdra::claims
