#pragma once
// Upstream's ConsumableShares (--consumable-shares, cmd/gpu-kubelet-plugin/consumable_shares.go;
// upstream-driver.md §4.3) and DRAListTypeAttributes (numa.go) applied to published devices:
//  * GPU and MIG devices (never VFIO) get allowMultipleAllocations;
//  * `memory` is rounded down to a multiple of 1Mi and gets a request policy with step 1Mi:
//    unlimited → default 0, range 0…max; memory → default max, range 1Mi…max;
//    N → default 0, range 0…max, plus capacity `shares` = N (default 1, range 1…N step 1);
//  * with DRAListTypeAttributes, resource.kubernetes.io/numaNode is a one-element int list.
// Pure; the publisher then keeps only what the API server serves (k8s/slice_plan.hpp SliceRules).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "agent/base/device.hpp"
#include "agent/base/result.hpp"

namespace nvdra::nvml {

struct ConsumableShares {
  enum class Mode { kDisabled, kUnlimited, kMemory, kCount };
  Mode mode = Mode::kDisabled;
  int64_t count = 0;  // kCount only
  bool enabled() const { return mode != Mode::kDisabled; }
  bool operator==(const ConsumableShares&) const = default;
};

// "disabled" | "memory" | "unlimited" | positive integer (upstream's message otherwise).
Result<ConsumableShares> parse_consumable_shares(std::string_view value);

// A Kubernetes quantity with an optional binary suffix (Ki…Ei) → bytes; nullopt for other forms.
std::optional<uint64_t> binary_quantity_bytes(std::string_view quantity);

// No-op for kDisabled and for devices whose `type` attribute is not gpu or mig.
void apply_consumable_shares(PublishedDevice& device, const ConsumableShares& shares);
// numaNode: int → [int] (DRAListTypeAttributes).
void use_list_attributes(PublishedDevice& device);
void apply_device_options(DriverResources& resources, const ConsumableShares& shares, bool list_attributes);

}  // namespace nvdra::nvml
