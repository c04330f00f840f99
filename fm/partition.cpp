#include <algorithm>
#include <iterator>

#include "fm/fabric_manager.hpp"

namespace nvdra::fm {

std::vector<unsigned> Partition::module_ids() const {
  std::vector<unsigned> out;
  for (const auto& g : gpus) out.push_back(g.module_id);
  std::sort(out.begin(), out.end());
  return out;
}

double Partition::nvlink_bandwidth_gbps() const {
  if (gpus.size() < 2) return 0;
  double least = -1;
  for (const auto& g : gpus) {
    const double bw = static_cast<double>(g.nvlinks_available) * g.nvlink_rate_mbps * 2 / 1000.0;
    if (least < 0 || bw < least) least = bw;
  }
  return least;
}

bool Partition::overlaps(const Partition& other) const {
  for (const auto& a : gpus)
    for (const auto& b : other.gpus)
      if (a.module_id == b.module_id) return true;
  return false;
}

std::string return_code_name(int rc) {
  // Every fmReturn_t of NVIDIA's nv_fm_types.h (FM 580), in order from 0 down.
  static constexpr const char* kNames[] = {
      "FM_ST_SUCCESS",                         "FM_ST_BADPARAM",
      "FM_ST_GENERIC_ERROR",                   "FM_ST_NOT_SUPPORTED",
      "FM_ST_UNINITIALIZED",                   "FM_ST_TIMEOUT",
      "FM_ST_VERSION_MISMATCH",                "FM_ST_IN_USE",
      "FM_ST_NOT_CONFIGURED",                  "FM_ST_CONNECTION_NOT_VALID",
      "FM_ST_NVLINK_ERROR",                    "FM_ST_RESOURCE_BAD",
      "FM_ST_RESOURCE_IN_USE",                 "FM_ST_RESOURCE_NOT_IN_USE",
      "FM_ST_RESOURCE_EXHAUSTED",              "FM_ST_RESOURCE_NOT_READY",
      "FM_ST_PARTITION_EXISTS",                "FM_ST_PARTITION_ID_IN_USE",
      "FM_ST_PARTITION_ID_NOT_IN_USE",         "FM_ST_PARTITION_NAME_IN_USE",
      "FM_ST_PARTITION_NAME_NOT_IN_USE",       "FM_ST_PARTITION_ID_NAME_MISMATCH",
      "FM_ST_NOT_READY",                       "FM_ST_RESOURCE_USED_IN_THIS_PARTITION",
      "FM_ST_RESOURCE_USED_IN_ANOTHER_PARTITION", "FM_ST_PARTITION_MISWIRED_TRUNKS",
      "FM_ST_PARTITION_INSUFFICIENT_TRUNKS",   "FM_ST_PARTITION_MISSING_SWITCHES",
      "FM_ST_PARTITION_NETWORK_CONFIG_ERROR",  "FM_ST_PARTITION_ROUTE_PROGRAMMING_ERROR"};
  constexpr int kLast = -static_cast<int>(std::size(kNames) - 1);
  if (rc <= 0 && rc >= kLast) return std::string(kNames[-rc]) + " (" + std::to_string(rc) + ")";
  return "FM return code " + std::to_string(rc);
}

std::vector<Partition> hgx8_partitions(unsigned links, unsigned rate_mbps) {
  // FM's default Shared NVSwitch table for HGX H100/H200 (`fmpm -l`): 0 all eight, 1–2 the boards'
  // halves, 3–6 the pairs [1 3] [2 4] [5 7] [6 8], 7–14 module 1..8 alone.
  const std::vector<std::vector<unsigned>> sets = {{1, 2, 3, 4, 5, 6, 7, 8}, {1, 2, 3, 4}, {5, 6, 7, 8}, {1, 3},
                                                   {2, 4}, {5, 7}, {6, 8}, {1}, {2}, {3}, {4}, {5}, {6}, {7}, {8}};
  std::vector<Partition> out;
  unsigned id = 0;
  for (const auto& set : sets) {
    Partition p;
    p.id = id++;
    for (unsigned m : set) p.gpus.push_back(PartitionGpu{m, set.size() > 1 ? links : 0, links, rate_mbps});
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace nvdra::fm
