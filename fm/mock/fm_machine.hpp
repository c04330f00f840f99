#pragma once
// The mock libnvfm.so.1's machine: the FabricManager part of an NVML mock machine profile (the
// same YAML file, NVDRA_MOCK_PROFILE) and its mutable state. Profile keys (others are NVML's):
//
//   nvswitches: 4                 # NVSwitch count: nvdra-fake-node lays out that many
//                                 # <host root>/proc/driver/nvidia-nvswitch/devices entries
//   fabricManager:
//     running: true               # false: fmConnect answers FM_ST_CONNECTION_NOT_VALID
//     mode: sharedNVSwitch        # FM's FABRIC_MODE; bareMetal: partition calls are FM_ST_NOT_SUPPORTED
//     tcpAddress: 127.0.0.1       # the one TCP address fmConnect accepts (default 127.0.0.1)
//     nvlinks: 18                 # per GPU in multi-GPU partitions
//     nvlinkRateMBps: 25000       # per link
//     partitions: hgx8            # the 8-GPU HGX table (fm::hgx8_partitions) or [{id: 1, gpus: [1, 2]}, …]
//
// State ("<profile base>.fm.state" in NVDRA_MOCK_STATE_DIR, else beside the NVML mock's state) is
// JSON, read and written under flock like the NVML mock's, so it survives a killed agent and a test
// can read and change it: {"active":[ids], "running":bool (overrides the profile), "failures":
// [{"function":"fmActivateFabricPartition","rc":-7,"remaining":1}], "calls":{"fmActivateFabricPartition":n,…},
// "lastConnect":"unix:…"}. Failure and call keys: "connect" (fmConnect), "fmGetSupportedFabricPartitions",
// "fmActivateFabricPartition", "fmDeactivateFabricPartition"; a failure naming anything else makes every
// call answer FM_ST_GENERIC_ERROR and say so on stderr, so a misspelt key cannot pass unnoticed.
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "fm/fabric_manager.hpp"

namespace nvdra::fm::mock {

struct FmProfile {
  bool present = false;  // the profile has a fabricManager section
  bool running = true;
  bool shared_nvswitch = true;
  std::string tcp_address = "127.0.0.1";
  std::vector<Partition> partitions;
};

struct Failure {
  std::string function;
  int rc = 0;
  unsigned remaining = 1;
};

struct FmState {
  std::vector<unsigned> active;
  std::optional<bool> running;
  std::vector<Failure> failures;
  std::map<std::string, unsigned> calls;
  std::string last_connect;
};

inline constexpr const char* kFailureKeys[] = {"connect", "fmGetSupportedFabricPartitions", "fmActivateFabricPartition",
                                                "fmDeactivateFabricPartition"};

// Errors name the file and the field.
Result<FmProfile> load_fm_profile(const std::string& path);
std::string state_path_for_profile(const std::string& profile_path);

// Runs fn on the state under the file lock; writes it back when fn returns true.
void with_state(const std::string& path, const std::function<bool(FmState&)>& fn);

}  // namespace nvdra::fm::mock
