#include "agent/claims/checkpoint/checkpoint_memory_store.hpp"

namespace nvdra::claims {

Result<LoadedCheckpoint> MemoryCheckpointStore::load() {
  std::lock_guard lock(mu_);
  if (!bytes_) return LoadedCheckpoint{};
  auto cp = decode_checkpoint(*bytes_, "memory");
  if (!cp) return std::move(cp).error();
  return LoadedCheckpoint{std::move(*cp), {}};
}

Status MemoryCheckpointStore::save(const Checkpoint& checkpoint) { return save_changed(checkpoint, {}, false); }

bool MemoryCheckpointStore::warm(int budget) {
  std::lock_guard lock(mu_);
  return encoder_.warm(budget);
}

Status MemoryCheckpointStore::save_changed(const Checkpoint& checkpoint, const std::vector<std::string>& changed) {
  return save_changed(checkpoint, changed, true);
}

Status MemoryCheckpointStore::save_changed(const Checkpoint& checkpoint, const std::vector<std::string>& changed,
                                           bool known) {
  std::lock_guard lock(mu_);
  std::string bytes = encoder_.encode(checkpoint, known ? &changed : nullptr);
  if (failures_ > 0) {
    --failures_;
    encoder_.reset();
    return make_error(ErrorCode::kUnavailable, "cannot write checkpoint memory: injected failure");
  }
  bytes_ = std::move(bytes);
  ++stats_.saves;
  return {};
}

CheckpointStats MemoryCheckpointStore::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

void MemoryCheckpointStore::fail_next_saves(int count) {
  std::lock_guard lock(mu_);
  failures_ = count;
}

std::optional<std::string> MemoryCheckpointStore::bytes() const {
  std::lock_guard lock(mu_);
  return bytes_;
}

}  // namespace nvdra::claims
