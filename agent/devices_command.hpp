#pragma once
// `nvdra-agent devices [-o table|json]`: loads NVML exactly as the agent does (--nvml-library,
// else the driver root, else the loader's path), discovers, prints, exits. The JSON form is also
// what the ABI check (test/nvml/abi) compares against a program built with NVIDIA's nvml.h.
#include <boost/json/value.hpp>

#include <cstdio>
#include <string>

#include "agent/config/options.hpp"
#include "nvml/device_model.hpp"

namespace nvdra {

// The device model plus the clique id and the devices gpu.nvidia.com would publish.
boost::json::value device_model_json(const nvml::DeviceModel& model);

// Returns the process exit status: 0, or 1 with one line on `err` naming what failed.
int run_devices_command(const config::Options& options, const std::string& format, std::FILE* out, std::FILE* err);

}  // namespace nvdra
