#pragma once
// The JSON form of a StatusSnapshot: what GetStatusJson returns and `nvdractl -o json` prints.
// Field names are stable (scripts read them): camelCase, as Kubernetes objects spell theirs.
#include <boost/json/value.hpp>

#include "agent/systemd_bus/status_snapshot.hpp"

namespace nvdra::systemd_bus {

boost::json::value to_json(const StatusSnapshot& s);
boost::json::value to_json(const DriverStatus& d);
boost::json::value to_json(const DeviceStatus& d);
boost::json::value to_json(const ClaimStatus& c);
boost::json::value to_json(const ImexStatus& i);
boost::json::value to_json(const FabricStatus& f);
boost::json::value to_json(const ErrorRecord& e);

}  // namespace nvdra::systemd_bus
