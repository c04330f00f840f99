#include <algorithm>

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
  static constexpr const char* kNames[] = {"FM_ST_SUCCESS",         "FM_ST_BADPARAM",       "FM_ST_GENERIC_ERROR",
                                           "FM_ST_NOT_SUPPORTED",   "FM_ST_UNINITIALIZED",  "FM_ST_TIMEOUT",
                                           "FM_ST_VERSION_MISMATCH", "FM_ST_IN_USE",        "FM_ST_NOT_CONFIGURED",
                                           "FM_ST_CONNECTION_NOT_VALID", "FM_ST_NVLINK_ERROR"};
  if (rc <= 0 && rc >= -10) return std::string(kNames[-rc]) + " (" + std::to_string(rc) + ")";
  return "FM return code " + std::to_string(rc);
}

std::vector<Partition> hgx8_partitions(unsigned links, unsigned rate_mbps) {
  const std::vector<std::vector<unsigned>> sets = {{1, 2, 3, 4, 5, 6, 7, 8}, {1, 2, 3, 4}, {5, 6, 7, 8}, {1, 2},
                                                   {3, 4}, {5, 6}, {7, 8}, {1}, {2}, {3}, {4}, {5}, {6}, {7}, {8}};
  std::vector<Partition> out;
  unsigned id = 1;
  for (const auto& set : sets) {
    Partition p;
    p.id = id++;
    for (unsigned m : set) p.gpus.push_back(PartitionGpu{m, set.size() > 1 ? links : 0, links, rate_mbps});
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace nvdra::fm
