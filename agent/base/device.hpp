#pragma once
// What a driver publishes about one device, as plain data: the vocabulary between device discovery
// (nvml/, imex/), the ResourceSlice publisher (k8s/) and the agent's status. Names and value types
// follow resource.k8s.io/v1 (DeviceAttribute, DeviceCapacity, CounterSet, DeviceTaint).
#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

namespace nvdra {

// A semantic version attribute ("version" in DeviceAttribute), e.g. "12.8.0".
struct SemVer {
  std::string value;
  bool operator==(const SemVer&) const = default;
};

// One attribute value: exactly one of int, bool, string, version — or, with the upstream
// DRAListTypeAttributes gate, a list of ints.
using AttributeValue = std::variant<bool, int64_t, std::string, SemVer, std::vector<int64_t>>;

struct DeviceTaint {
  std::string key;
  std::string value;
  std::string effect;  // NoSchedule | NoExecute | None
  bool operator==(const DeviceTaint&) const = default;
};

// counters a device consumes from one shared counter set (DynamicMIG). Values are quantities.
struct CounterConsumption {
  std::string counter_set;
  std::map<std::string, std::string> counters;
  bool operator==(const CounterConsumption&) const = default;
};

// How one capacity of a multi-allocatable device is consumed (resource.k8s.io/v1
// CapacityRequestPolicy with a validRange; quantities as strings). Consumable shares only.
struct CapacityRequestPolicy {
  std::string default_value;
  std::string min, max, step;  // validRange
  bool operator==(const CapacityRequestPolicy&) const = default;
};

struct PublishedDevice {
  std::string name;                                  // DNS label, e.g. "gpu-0", "gpu-0-mig-1g10gb-19-0"
  std::map<std::string, AttributeValue> attributes;  // unqualified names get the driver's domain
  std::map<std::string, std::string> capacity;       // name -> quantity ("40Gi", "98")
  std::vector<CounterConsumption> consumes_counters;
  std::vector<DeviceTaint> taints;
  // Consumable shares (upstream ConsumableShares): several claims may hold the device at once, each
  // consuming capacity as the per-capacity policies say (keys are capacity names).
  bool allow_multiple_allocations = false;
  std::map<std::string, CapacityRequestPolicy> request_policies;
  // Not published: devices with the same non-empty group (a physical GPU's, under DynamicMIG) get
  // slices of their own, groups in the order they first appear, as upstream publishes one slice per GPU.
  std::string slice_group;
  bool operator==(const PublishedDevice&) const = default;
};

struct CounterSet {
  std::string name;
  std::map<std::string, std::string> counters;  // name -> quantity
  bool operator==(const CounterSet&) const = default;
};

// Everything one driver wants published for this node. The publisher turns it into slices.
struct DriverResources {
  std::vector<PublishedDevice> devices;
  std::vector<CounterSet> shared_counters;
  bool operator==(const DriverResources&) const = default;
};

}  // namespace nvdra
