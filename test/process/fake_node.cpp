// nvdra-fake-node DIR NVML_LIBRARY [--driver-container] [--no-cdi-hook] — lays out a simulated GPU
// node for the demo and the process tests: a fake NVIDIA driver installation at NVML's driver
// version (DIR/node/driver: libraries with SONAME links, ld.so.cache, binaries, firmware,
// nvidia-cdi-hook) and a host root (DIR/node/host: /dev nodes as real character devices where
// mknod is permitted — in the driver root's dev/ with --driver-container, as a GPU Operator driver
// container has them — /proc/devices, the MIG capability files of every MIG device the mock NVML
// profile in NVDRA_MOCK_PROFILE has, and one /proc/driver/nvidia-nvswitch/devices entry per NVSwitch
// of the profile's `nvswitches:` count). nvidia-smi, nvidia-cuda-mps-control and nvidia-cdi-hook append
// their arguments to DIR/node/<name>.log, so tests can see what ran. Prints the two roots as JSON.
#include <sys/stat.h>

#include <boost/json.hpp>

#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

#include "nvml/discovery.hpp"
#include "nvml/gpu_library.hpp"
#include "nvml/mock/machine_profile.hpp"
#include "test/cdi/fake_driver_root.hpp"

namespace {

namespace fake = nvdra::cdi::testing;

// A helper program that records its arguments (and stdin, for mps-control's pipe commands).
void recording_program(const std::string& path, const std::string& log) {
  fake::write_file(path, "#!/bin/sh\necho \"$*\" >> '" + log + "'\n"
                         "[ -t 0 ] || cat >> '" + log + "' 2>/dev/null || true\nexit 0\n");
  ::chmod(path.c_str(), 0755);
}

// The profile file the mock NVML reads (NVDRA_MOCK_PROFILE: a name under the profiles directory, or a
// path), resolved as the mock does.
std::string profile_path() {
  const char* name = std::getenv("NVDRA_MOCK_PROFILE");
  if (name == nullptr || *name == '\0') return "";
  const char* dir = std::getenv("NVDRA_MOCK_PROFILES_DIR");
  return nvdra::nvml::mock::resolve_profile_path(name, dir != nullptr && *dir != '\0' ? dir : NVDRA_MOCK_PROFILES_DIR);
}

// The profile's NVSwitch count as the driver shows it: one entry per switch (fake PCI addresses).
void nvswitch_devices(const std::string& host_root) {
  const std::string path = profile_path();
  if (path.empty()) return;
  unsigned count = 0;
  try {
    const YAML::Node n = YAML::LoadFile(path)["nvswitches"];
    count = n ? n.as<unsigned>() : 0;
  } catch (const YAML::Exception&) {
    return;  // an unreadable profile is the mock NVML's to report (discovery above already used it)
  }
  for (unsigned i = 0; i < count; ++i) {
    char bdf[16];
    std::snprintf(bdf, sizeof bdf, "0000:%02x:00.0", 5 + i);
    fake::write_file(host_root + "/proc/driver/nvidia-nvswitch/devices/" + bdf, "");
  }
}

}  // namespace

int main(int argc, char** argv) {
  bool driver_container = false, cdi_hook = true;
  for (int i = 3; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--driver-container") driver_container = true;
    else if (a == "--no-cdi-hook") cdi_hook = false;
    else argc = 0;
  }
  if (argc < 3) {
    std::cerr << "usage: nvdra-fake-node DIR NVML_LIBRARY [--driver-container] [--no-cdi-hook]\n";
    return 2;
  }
  auto lib = nvdra::nvml::open_nvml(nvdra::nvml::LoadOptions{argv[2], "/"});
  if (!lib) {
    std::cerr << "nvdra-fake-node: " << lib.error().describe() << "\n";
    return 1;
  }
  auto model = nvdra::nvml::discover(**lib);
  if (!model) {
    std::cerr << "nvdra-fake-node: " << model.error().describe() << "\n";
    return 1;
  }
  // The driver's files at NVML's version (the agent refuses any other, as upstream does).
  const std::string dir = std::string(argv[1]) + "/node";
  fake::FakeDriverRoot root(fake::FakeDriverOptions{.version = model->system.driver_version,
                                                    .driver_container = driver_container,
                                                    .char_devices = true,
                                                    .keep_at = dir});
  for (const char* program : {"nvidia-smi", "nvidia-cuda-mps-control"})
    recording_program(root.driver_root() + "/usr/bin/" + program, dir + "/" + program + ".log");
  // Where the GPU Operator's driver container has it; the agent finds it there by default.
  if (cdi_hook) recording_program(root.driver_root() + "/usr/bin/nvidia-cdi-hook", dir + "/nvidia-cdi-hook.log");

  // MIG capability minors as the driver numbers them: unique per GI and CI.
  unsigned next_minor = 300;
  const std::string caps = root.host_root() + "/proc/driver/nvidia/capabilities/";
  const std::string dev = (driver_container ? root.driver_root() : root.host_root()) + "/dev/nvidia";
  for (const auto& gpu : model->gpus) {
    fake::make_char_device(dev + std::to_string(gpu.minor), 195, gpu.minor);
    for (const auto& mig : gpu.mig_devices) {
      const std::string gi = caps + "gpu" + std::to_string(mig.parent_minor) + "/mig/gi" + std::to_string(mig.gi_id);
      fake::write_file(gi + "/access", "DeviceFileMinor: " + std::to_string(next_minor++) + "\nDeviceFileMode: 292\n");
      fake::write_file(gi + "/ci" + std::to_string(mig.ci_id) + "/access",
                       "DeviceFileMinor: " + std::to_string(next_minor++) + "\nDeviceFileMode: 292\n");
    }
  }
  nvswitch_devices(root.host_root());
  boost::json::object out{{"driver_root", root.driver_root()}, {"host_root", root.host_root()}};
  std::cout << boost::json::serialize(out) << "\n";
  return 0;
}
