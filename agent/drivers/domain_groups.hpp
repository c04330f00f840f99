#pragma once
// The compute-domain checkpoint's device groups (upstream-driver.md §6.1) for both kinds of claim of
// driver-managed mode: {"devices":[{"channel":{info,device},"daemon":null}],"configState":{"Type":
// "channel","ComputeDomain":uid}} and the same with "daemon" holding the device. Host-managed
// channel entries have the channel form, so either mode reads the other's entries.
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include <string>
#include <vector>

#include "agent/base/result.hpp"
#include "agent/kubelet/claim_handler.hpp"

namespace nvdra::drivers {

enum class DomainDeviceKind { kChannel, kDaemon };

struct DomainEntry {
  DomainDeviceKind kind = DomainDeviceKind::kChannel;
  std::string domain;  // configState.ComputeDomain ("" when absent)
  std::vector<kubelet::PreparedDevice> devices;
};

// One device of a group as both plugins' checkpoints write it ({"Requests","PoolName","DeviceName",
// "CDIDeviceIDs"}); fields of another type are left empty.
kubelet::PreparedDevice prepared_device_of(const boost::json::object& o);

boost::json::array encode_domain_groups(DomainDeviceKind kind, const kubelet::PreparedDevice& device,
                                        const std::string& request, const std::string& domain);
// Errors name the claim.
Result<DomainEntry> decode_domain_groups(const boost::json::array& groups, const std::string& claim);

}  // namespace nvdra::drivers
