#include "nvml/consumable_shares.hpp"

#include <charconv>

#include "nvml/upstream_names.hpp"

namespace nvdra::nvml {

namespace {
constexpr uint64_t kMi = 1024 * 1024;
constexpr std::string_view kNumaNode = "resource.kubernetes.io/numaNode";
}  // namespace

Result<ConsumableShares> parse_consumable_shares(std::string_view v) {
  ConsumableShares out;
  if (v == "disabled" || v.empty()) return out;
  if (v == "unlimited") return ConsumableShares{ConsumableShares::Mode::kUnlimited, 0};
  if (v == "memory") return ConsumableShares{ConsumableShares::Mode::kMemory, 0};
  int64_t n = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec == std::errc() && end == v.data() + v.size() && n > 0) return ConsumableShares{ConsumableShares::Mode::kCount, n};
  return make_error(ErrorCode::kInvalidArgument,
                    "invalid value for --consumable-shares: \"" + std::string(v) +
                        "\" (must be 'disabled', 'memory', 'unlimited', or a positive integer)");
}

std::optional<uint64_t> binary_quantity_bytes(std::string_view q) {
  uint64_t n = 0;
  auto [end, ec] = std::from_chars(q.data(), q.data() + q.size(), n);
  if (ec != std::errc()) return std::nullopt;
  const std::string_view suffix(end, static_cast<std::size_t>(q.data() + q.size() - end));
  static constexpr std::pair<std::string_view, unsigned> kSuffixes[] = {
      {"", 0}, {"Ki", 10}, {"Mi", 20}, {"Gi", 30}, {"Ti", 40}, {"Pi", 50}, {"Ei", 60}};
  for (const auto& [s, shift] : kSuffixes)
    if (suffix == s) {
      if (shift > 0 && n > (UINT64_MAX >> shift)) return std::nullopt;
      return n << shift;
    }
  return std::nullopt;
}

void apply_consumable_shares(PublishedDevice& d, const ConsumableShares& shares) {
  if (!shares.enabled()) return;
  const auto type = d.attributes.find("type");
  const auto* t = type == d.attributes.end() ? nullptr : std::get_if<std::string>(&type->second);
  if (!t || (*t != "gpu" && *t != "mig")) return;
  d.allow_multiple_allocations = true;
  const auto memory = d.capacity.find("memory");
  if (memory == d.capacity.end()) return;
  const auto bytes = binary_quantity_bytes(memory->second);
  if (!bytes) return;
  // requestPolicy max and default must be multiples of the step (upstream's comment): round down.
  const std::string max = binary_si(*bytes / kMi * kMi);
  memory->second = max;
  const std::string step = "1Mi";
  switch (shares.mode) {
    case ConsumableShares::Mode::kUnlimited:
      d.request_policies["memory"] = CapacityRequestPolicy{"0", "0", max, step};
      break;
    case ConsumableShares::Mode::kMemory:
      d.request_policies["memory"] = CapacityRequestPolicy{max, step, max, step};
      break;
    case ConsumableShares::Mode::kCount: {
      d.request_policies["memory"] = CapacityRequestPolicy{"0", "0", max, step};
      const std::string n = std::to_string(shares.count);
      d.capacity["shares"] = n;
      d.request_policies["shares"] = CapacityRequestPolicy{"1", "1", n, "1"};
      break;
    }
    case ConsumableShares::Mode::kDisabled:
      break;
  }
}

void use_list_attributes(PublishedDevice& d) {
  const auto it = d.attributes.find(std::string(kNumaNode));
  if (it == d.attributes.end()) return;
  if (const auto* n = std::get_if<int64_t>(&it->second)) it->second = std::vector<int64_t>{*n};
}

void apply_device_options(DriverResources& resources, const ConsumableShares& shares, bool list_attributes) {
  for (auto& d : resources.devices) {
    apply_consumable_shares(d, shares);
    if (list_attributes) use_list_attributes(d);
  }
}

}  // namespace nvdra::nvml
