#pragma once
// The test SpecStore: files in a map. Lets claims tests inspect what was written, count batches
// (group commit) and inject a failure. Thread-safe (one mutex).
#include <map>
#include <mutex>
#include <optional>

#include "cdi/spec_store.hpp"

namespace nvdra::cdi {

class MemorySpecStore final : public SpecStore {
 public:
  Status apply(std::span<const SpecChange> changes) override;
  Result<std::string> read(const std::string& file_name) override;
  Result<std::vector<std::string>> list() override;

  // The next apply() fails with `error` after applying `after` changes of its batch.
  void fail_next(Error error, size_t after = 0);
  std::map<std::string, std::string> files() const;
  size_t batches() const;  // successful or failed apply() calls with at least one change

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::string> files_;
  std::optional<std::pair<Error, size_t>> fail_;
  size_t batches_ = 0;
};

}  // namespace nvdra::cdi
