// A mock-NVML machine profile (nvml/mock/machine_profile). Invariant: errors name the file.
#include <string_view>

#include "nvml/mock/machine_profile.hpp"
#include "test/fuzz/fuzz_target.hpp"

NVDRA_FUZZ_TARGET(machine_profile) {
  const std::string_view yaml(reinterpret_cast<const char*>(data.data()), data.size());
  auto profile = nvdra::nvml::mock::parse_profile(yaml, "fuzz.yaml");
  if (!profile.ok()) {
    NVDRA_FUZZ_CHECK(profile.error().message.starts_with("profile fuzz.yaml"));
    return nvdra::fuzz::Verdict::kRejected;
  }
  return nvdra::fuzz::Verdict::kAccepted;
}
