#pragma once
// The agent's whole configuration surface as JSON, for the option/gate coverage test
// (test/config): every option of the table with its flag spellings and environment variables,
// the options the loader handles itself, and every feature gate with its default and stage.
// Printed by the hidden `nvdra-agent --dump-options-json`.
#include <string>

namespace nvdra::config {

std::string options_json();

}  // namespace nvdra::config
