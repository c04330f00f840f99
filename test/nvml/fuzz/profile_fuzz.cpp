// libFuzzer target for the machine-profile parser: any bytes must give a profile or an Error,
// never a crash, a hang or a sanitizer report. Seeds: nvml/mock/profiles/*.yaml.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "nvml/mock/machine_profile.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto profile = nvdra::nvml::mock::parse_profile(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.yaml");
  if (!profile.ok() && profile.error().message.rfind("profile fuzz.yaml", 0) != 0) __builtin_trap();  // must name the file
  return 0;
}
