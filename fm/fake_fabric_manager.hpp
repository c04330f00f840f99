#pragma once
// FakeFabricManager — the test implementation of the FabricManager seam: a partition table in
// memory with FM's activation rules (an overlapping partition cannot be activated: FM_ST_IN_USE),
// call counts, and queued failures. Thread-safe.
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "fm/fabric_manager.hpp"

namespace nvdra::fm {

class FakeFabricManager final : public FabricManager {
 public:
  explicit FakeFabricManager(std::vector<Partition> table = hgx8_partitions()) : table_(std::move(table)) {}

  Result<std::vector<Partition>> partitions() override;
  Status activate(unsigned partition_id) override;
  Status deactivate(unsigned partition_id) override;
  std::string endpoint() const override { return "fake:"; }

  // The next call of `function` ("activate", "deactivate", "partitions") fails with FM code `rc`.
  void fail_next(const std::string& function, int rc);
  std::vector<unsigned> active() const;
  int calls(const std::string& function) const;

 private:
  Status take_failure(const std::string& function, const std::string& what);
  mutable std::mutex mu_;
  std::vector<Partition> table_;
  std::map<std::string, std::vector<int>> failures_;
  std::map<std::string, int> calls_;
};

}  // namespace nvdra::fm
