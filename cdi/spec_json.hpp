#pragma once
// Spec -> JSON with Boost.JSON. cdiVersion is the lowest version whose features the spec uses, as
// container-device-interface's MinimumRequiredVersion computes it (SPEC.md "Released versions"):
// 0.4.0 mount type, 0.5.0 device-node hostPath or a device name starting with a digit,
// 0.6.0 annotations or a dot in the kind's name segment, 0.7.0 additionalGids; floor 0.3.0.
// Pure functions, safe from any thread.
#include <boost/json/value.hpp>
#include <string>

#include "cdi/spec_model.hpp"

namespace nvdra::cdi {

std::string minimum_version(const Spec& spec);

// The whole document, cdiVersion included. Empty optional fields are left out.
boost::json::value to_json(const Spec& spec);

// The file content: compact JSON and a trailing newline.
std::string serialize(const Spec& spec);

}  // namespace nvdra::cdi
