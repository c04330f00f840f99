// The agent's YAML config file (agent/config/config_file). Invariants: errors name the file and
// line; entries have a key and a 1-based line.
#include <string>

#include "agent/config/config_file.hpp"
#include "test/fuzz/fuzz_target.hpp"

NVDRA_FUZZ_TARGET(agent_config) {
  const std::string text(reinterpret_cast<const char*>(data.data()), data.size());
  auto entries = nvdra::config::parse_config_text(text, "fuzz.yaml");
  if (!entries.ok()) {
    NVDRA_FUZZ_CHECK(entries.error().message.starts_with("fuzz.yaml"));
    return nvdra::fuzz::Verdict::kRejected;
  }
  for (const auto& e : *entries) {
    NVDRA_FUZZ_CHECK(!e.key.empty());
    NVDRA_FUZZ_CHECK(e.line >= 1);
  }
  return nvdra::fuzz::Verdict::kAccepted;
}
