#include "cdi/memory_spec_store.hpp"

namespace nvdra::cdi {

Status MemorySpecStore::apply(std::span<const SpecChange> changes) {
  std::lock_guard lock(mu_);
  if (!changes.empty()) ++batches_;
  auto fail = std::exchange(fail_, std::nullopt);
  size_t done = 0;
  for (const auto& c : changes) {
    if (fail && done == fail->second) return fail->first;
    if (auto s = validate_file_name(c.file_name); !s) return s;
    if (c.op == SpecOp::kWrite)
      files_[c.file_name] = c.content;
    else
      files_.erase(c.file_name);
    ++done;
  }
  if (fail && done == fail->second) return fail->first;
  return {};
}

Result<std::string> MemorySpecStore::read(const std::string& file_name) {
  std::lock_guard lock(mu_);
  auto it = files_.find(file_name);
  if (it == files_.end()) return make_error(ErrorCode::kNotFound, "no CDI spec " + file_name);
  return it->second;
}

Result<std::vector<std::string>> MemorySpecStore::list() {
  std::lock_guard lock(mu_);
  std::vector<std::string> out;
  for (const auto& [name, _] : files_) out.push_back(name);
  return out;
}

void MemorySpecStore::fail_next(Error error, size_t after) {
  std::lock_guard lock(mu_);
  fail_ = std::make_pair(std::move(error), after);
}

std::map<std::string, std::string> MemorySpecStore::files() const {
  std::lock_guard lock(mu_);
  return files_;
}

size_t MemorySpecStore::batches() const {
  std::lock_guard lock(mu_);
  return batches_;
}

}  // namespace nvdra::cdi
