#include "fm/fake_fabric_manager.hpp"

#include <algorithm>

namespace nvdra::fm {

Status FakeFabricManager::take_failure(const std::string& function, const std::string& what) {
  ++calls_[function];
  auto& queue = failures_[function];
  if (queue.empty()) return {};
  const int rc = queue.front();
  queue.erase(queue.begin());
  return make_error(ErrorCode::kUnavailable, "fabric manager: " + what + ": " + return_code_name(rc));
}

Result<std::vector<Partition>> FakeFabricManager::partitions() {
  std::lock_guard lock(mu_);
  if (auto st = take_failure("partitions", "fmGetSupportedFabricPartitions"); !st) return st.error();
  return table_;
}

Status FakeFabricManager::activate(unsigned id) {
  std::lock_guard lock(mu_);
  const std::string what = "fmActivateFabricPartition(" + std::to_string(id) + ")";
  if (auto st = take_failure("activate", what); !st) return st;
  auto it = std::find_if(table_.begin(), table_.end(), [&](const Partition& p) { return p.id == id; });
  if (it == table_.end())
    return make_error(ErrorCode::kInvalidArgument, "fabric manager: " + what + ": " + return_code_name(-1));
  if (it->active) return {};
  for (const auto& p : table_)
    if (p.active && p.overlaps(*it))
      return make_error(ErrorCode::kUnavailable, "fabric manager: " + what + ": " + return_code_name(-7) +
                                                     ": partition " + std::to_string(p.id) + " is active");
  it->active = true;
  return {};
}

Status FakeFabricManager::deactivate(unsigned id) {
  std::lock_guard lock(mu_);
  const std::string what = "fmDeactivateFabricPartition(" + std::to_string(id) + ")";
  if (auto st = take_failure("deactivate", what); !st) return st;
  for (auto& p : table_)
    if (p.id == id) {
      p.active = false;
      return {};
    }
  return make_error(ErrorCode::kInvalidArgument, "fabric manager: " + what + ": " + return_code_name(-1));
}

void FakeFabricManager::fail_next(const std::string& function, int rc) {
  std::lock_guard lock(mu_);
  failures_[function].push_back(rc);
}

std::vector<unsigned> FakeFabricManager::active() const {
  std::lock_guard lock(mu_);
  std::vector<unsigned> out;
  for (const auto& p : table_)
    if (p.active) out.push_back(p.id);
  return out;
}

int FakeFabricManager::calls(const std::string& function) const {
  std::lock_guard lock(mu_);
  auto it = calls_.find(function);
  return it == calls_.end() ? 0 : it->second;
}

}  // namespace nvdra::fm
