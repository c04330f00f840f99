#pragma once
// MemoryCheckpointStore — the test CheckpointStore: keeps the encoded bytes (so every save and
// load goes through the real encoding and checksum, incremental for save_changed() as in the file
// store) and can be told to fail saves.
#include <mutex>
#include <optional>
#include <string>

#include "agent/claims/checkpoint/checkpoint_encoder.hpp"
#include "agent/claims/checkpoint/checkpoint_store.hpp"

namespace nvdra::claims {

class MemoryCheckpointStore final : public CheckpointStore {
 public:
  MemoryCheckpointStore() = default;
  explicit MemoryCheckpointStore(std::string initial_bytes) : bytes_(std::move(initial_bytes)) {}

  Result<LoadedCheckpoint> load() override;
  Status save(const Checkpoint& checkpoint) override;
  Status save_changed(const Checkpoint& checkpoint, const std::vector<std::string>& changed) override;
  bool warm(int budget) override;
  CheckpointStats stats() const override;
  std::string location() const override { return "memory"; }

  // The next `count` saves fail with kUnavailable and leave the content unchanged.
  void fail_next_saves(int count);
  std::optional<std::string> bytes() const;

 private:
  Status save_changed(const Checkpoint& checkpoint, const std::vector<std::string>& changed, bool known);
  mutable std::mutex mu_;
  std::optional<std::string> bytes_;
  int failures_ = 0;
  CheckpointStats stats_;
  CheckpointEncoder encoder_;  // the file store's encoding, so committer tests cover it
};

}  // namespace nvdra::claims
