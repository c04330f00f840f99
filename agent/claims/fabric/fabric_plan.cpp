#include "agent/claims/fabric/fabric_plan.hpp"

#include <algorithm>
#include <cstdio>

namespace nvdra::claims {
namespace {

constexpr const char* kBase = "fabricTopologyConfig";

Error field_error(std::string message, std::string field) {
  return Error{ErrorCode::kFailedPrecondition, std::move(message), {}, std::move(field)};
}

std::string describe_table(const std::vector<fm::Partition>& table, std::optional<std::size_t> size = std::nullopt) {
  std::string out;
  for (const auto& p : table) {
    if (size && p.gpus.size() != *size) continue;
    out += (out.empty() ? "" : ", ") + std::to_string(p.id) + " " + module_set(p.module_ids());
  }
  return out.empty() ? "none" : out;
}

std::optional<unsigned> parse_id(const std::string& text) {
  std::string digits = text.rfind("partition-", 0) == 0 ? text.substr(10) : text;
  if (digits.empty() || digits.size() > 9 || !std::all_of(digits.begin(), digits.end(), ::isdigit)) return std::nullopt;
  return static_cast<unsigned>(std::stoul(digits));
}

const fm::Partition* by_id(const std::vector<fm::Partition>& table, unsigned id) {
  for (const auto& p : table)
    if (p.id == id) return &p;
  return nullptr;
}

std::string gbps(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

}  // namespace

std::string module_set(const std::vector<unsigned>& modules) {
  std::string out = "[";
  for (std::size_t i = 0; i < modules.size(); ++i) out += (i ? " " : "") + std::to_string(modules[i]);
  return out + "]";
}

namespace {

// The plans decided before FM's table is looked at: none needed (an empty plan) or a refusal;
// nullopt when the claim's GPUs need partitions from the table.
std::optional<Result<FabricPlan>> without_table(const FabricRequest& req,
                                                const std::optional<std::vector<fm::Partition>>& fabric,
                                                const std::string& unavailable, FabricGates gates, bool fm_expected) {
  const auto& cfg = req.config;
  if (!cfg && !gates.fm_partitioning) return FabricPlan{};
  if (cfg && (cfg->strategy == "Disabled" || cfg->virtualization_model == "VGPU")) return FabricPlan{};
  if (!cfg && (req.modules.empty() && req.gpus_without_module.empty())) return FabricPlan{};  // MIG only: upstream skips
  if (!cfg && !fabric && !fm_expected) return FabricPlan{};  // upstream: no NVSwitch, no FM, nothing to activate
  if (cfg && req.modules.empty() && req.gpus_without_module.empty())
    return field_error("fabricTopologyConfig applies to full GPUs, and this claim has none (MIG devices only)", kBase);
  if (!fabric && fm_expected)
    return Error{ErrorCode::kUnavailable,
                 "fabric manager is not connected (" + unavailable +
                     "); this node has NVSwitches, so the claim's GPUs need a Fabric Manager partition activated and "
                     "the claim cannot be prepared until the agent connects (it retries in the background)",
                 {}, cfg ? kBase : ""};
  if (!fabric)
    return field_error("fabricTopologyConfig needs NVIDIA Fabric Manager, and this node has none: " + unavailable, kBase);
  if (!req.gpus_without_module.empty())
    return field_error("fabric manager: GPU " + req.gpus_without_module.front() +
                           " has no module id (nvmlDeviceGetModuleId), so no FM partition can be matched to it",
                       cfg ? kBase : "");
  if (cfg && cfg->max_latency)
    return field_error("maxLatency is not supported: the fabricTopologyConfig API gives it no definition nvdra "
                       "could check (latency of what, measured how?) and Fabric Manager reports no latency for a "
                       "partition, so nvdra will not promise one; remove maxLatency and ask for minBandwidth (GB/s "
                       "per GPU, checked against FM's NVLink figures) and/or partitionSize",
                       std::string(kBase) + ".maxLatency");
  return std::nullopt;
}

// Upstream's rule (no config) and strategy Auto: the one partition of exactly the claim's GPUs.
Status plan_auto(const FabricRequest& req, const std::vector<fm::Partition>& table, FabricPlan& plan) {
  const auto& cfg = req.config;
  const std::size_t size = cfg && cfg->partition_size ? static_cast<std::size_t>(*cfg->partition_size) : req.modules.size();
  if (cfg && size != req.modules.size())
    return field_error("partitionSize " + std::to_string(size) + " needs a claim of exactly " + std::to_string(size) +
                           " GPUs from one partition; this claim has " + std::to_string(req.modules.size()) +
                           " (modules " + module_set(req.modules) + ")",
                       std::string(kBase) + ".partitionSize");
  for (const auto& p : table)
    if (p.gpus.size() == size && p.module_ids() == req.modules) plan.partitions = {p.id};
  if (plan.partitions.empty()) {
    if (!cfg)  // upstream's message, verbatim
      return field_error("fabric manager: GPU module set " + module_set(req.modules) +
                             " does not match any FM partition; refusing partition activation",
                         "");
    return field_error("no Fabric Manager partition holds exactly the claim's GPUs (modules " +
                           module_set(req.modules) + "); partitions of " + std::to_string(size) +
                           " GPUs here: " + describe_table(table, size),
                       std::string(kBase) + ".strategy");
  }
  plan.rule = cfg ? "Auto" : "FabricManagerPartitioning";
  return {};
}

// Strategy Manual, one listed id: it must name a partition here, of partitionSize when given, that
// overlaps none listed before it.
Result<const fm::Partition*> listed_partition(const FabricTopologyConfig& cfg, std::size_t i,
                                              const std::vector<fm::Partition>& table, const FabricPlan& plan) {
  const std::string field = std::string(kBase) + ".partitionIDs[" + std::to_string(i) + "]";
  const auto id = parse_id(cfg.partition_ids[i]);
  const fm::Partition* p = id ? by_id(table, *id) : nullptr;
  if (!p)
    return field_error("partition \"" + cfg.partition_ids[i] + "\" is not a Fabric Manager partition of this " +
                           "node (ids as \"3\" or \"partition-3\"); partitions here: " + describe_table(table),
                       field);
  // partitionSize under Manual: every listed partition must be of that size (the seed's "2, 4, or 8 GPUs").
  if (cfg.partition_size && p->gpus.size() != static_cast<std::size_t>(*cfg.partition_size))
    return field_error("partition " + std::to_string(p->id) + " " + module_set(p->module_ids()) + " has " +
                           std::to_string(p->gpus.size()) + " GPUs, not partitionSize " +
                           std::to_string(*cfg.partition_size) + " (strategy Manual: each listed partition must "
                           "be of partitionSize; remove partitionSize to list partitions of any size)",
                       std::string(kBase) + ".partitionSize");
  for (unsigned other : plan.partitions)
    if (const auto* q = by_id(table, other); q->overlaps(*p))
      return field_error("partition " + std::to_string(p->id) + " " + module_set(p->module_ids()) +
                             " overlaps partition " + std::to_string(other) + " " + module_set(q->module_ids()) +
                             " listed before it; Fabric Manager cannot activate both",
                         field);
  return p;
}

// Strategy Manual: the listed partitions, which together must cover the claim's GPUs.
Status plan_manual(const FabricRequest& req, const std::vector<fm::Partition>& table, FabricPlan& plan) {
  const auto& cfg = *req.config;
  std::vector<unsigned> covered;
  for (std::size_t i = 0; i < cfg.partition_ids.size(); ++i) {
    auto p = listed_partition(cfg, i, table, plan);
    if (!p) return p.error();
    if (std::find(plan.partitions.begin(), plan.partitions.end(), (*p)->id) != plan.partitions.end()) continue;
    plan.partitions.push_back((*p)->id);
    for (unsigned m : (*p)->module_ids()) covered.push_back(m);
  }
  std::vector<unsigned> missing;
  for (unsigned m : req.modules)
    if (std::find(covered.begin(), covered.end(), m) == covered.end()) missing.push_back(m);
  if (!missing.empty())
    return field_error("partitions " + module_set(plan.partitions) + " do not cover the claim's GPUs: modules " +
                           module_set(missing) + " are in none of them (the claim has " + module_set(req.modules) + ")",
                       std::string(kBase) + ".partitionIDs");
  std::sort(plan.partitions.begin(), plan.partitions.end());
  plan.rule = "Manual";
  return {};
}

Status check_bandwidth(const FabricTopologyConfig& cfg, const std::vector<fm::Partition>& table,
                       const FabricPlan& plan) {
  if (!cfg.min_bandwidth) return {};
  for (unsigned id : plan.partitions) {
    const auto* p = by_id(table, id);
    if (p->nvlink_bandwidth_gbps() < *cfg.min_bandwidth)
      return field_error("partition " + std::to_string(id) + " " + module_set(p->module_ids()) + " gives " +
                             gbps(p->nvlink_bandwidth_gbps()) + " GB/s of NVLink bandwidth per GPU, below minBandwidth " +
                             gbps(*cfg.min_bandwidth) + " (bandwidth = NVLinks available x line rate x 2, from FM)",
                         std::string(kBase) + ".minBandwidth");
  }
  return {};
}

}  // namespace

Result<FabricPlan> plan_fabric(const FabricRequest& req, const std::optional<std::vector<fm::Partition>>& fabric,
                               const std::string& unavailable, FabricGates gates, bool fm_expected) {
  if (auto decided = without_table(req, fabric, unavailable, gates, fm_expected)) return std::move(*decided);
  const auto& cfg = req.config;
  const auto& table = *fabric;
  FabricPlan plan;
  Status st = !cfg || cfg->strategy == "Auto" ? plan_auto(req, table, plan) : plan_manual(req, table, plan);
  if (!st) return st.error();
  if (cfg)
    if (auto bw = check_bandwidth(*cfg, table, plan); !bw) return bw.error();
  plan.activate = !cfg || cfg->virtualization_model != "FullPassthrough";
  if (cfg && !plan.activate) plan.rule += " (FullPassthrough: left to the guest)";
  return plan;
}

}  // namespace nvdra::claims
