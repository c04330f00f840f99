#pragma once
// CheckpointStore — the seam where claim state becomes durable (DEVELOPERS.md: one header per
// seam). Real: FileCheckpointStore (<plugin data dir>/checkpoint.json, upstream's format, atomic
// replace + fsync). Test: MemoryCheckpointStore (the encoded bytes in memory, failure injection).
//
// Contract: load() and save() block (file I/O, fsync) — call them on the worker pool, never on
// the io_context; CheckpointCommitter does that and batches saves. They are not re-entrant: one
// call at a time per store (the committer guarantees it). save() returns only once the new
// content is durable: whole on disk and what every later load() reads, also after kill -9 (what a
// power loss keeps is explained in checkpoint_file_store.hpp); on error the previous content is
// intact. A corrupt file is never silently
// dropped: load() fails naming the file, and a copy of the bad bytes is kept aside.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "agent/base/result.hpp"
#include "agent/claims/checkpoint/checkpoint_model.hpp"

namespace nvdra::claims {

struct CheckpointStats {
  uint64_t saves = 0;   // successful save() calls
  uint64_t fsyncs = 0;  // fsync calls made
};

struct LoadedCheckpoint {
  std::optional<Checkpoint> checkpoint;  // nullopt: there was none
  std::string moved_aside;               // set when a bad file was moved aside (policy kStartEmpty)
  std::string problem;                   // then: what was wrong with it (the load error's sentence)
};

class CheckpointStore {
 public:
  virtual ~CheckpointStore() = default;
  virtual Result<LoadedCheckpoint> load() = 0;
  virtual Status save(const Checkpoint& checkpoint) = 0;
  // save() for a caller that knows which claims changed (the UIDs put or erased) since the last
  // save()/save_changed() that succeeded on this store: a store may then encode only those
  // (CheckpointEncoder). Same bytes, same durability. The default saves in full.
  virtual Status save_changed(const Checkpoint& checkpoint, const std::vector<std::string>& changed) {
    (void)changed;
    return save(checkpoint);
  }
  // Spends up to `budget` units of idle work that makes later saves cheaper (FileCheckpointStore:
  // the checksum spans of claims that outlived a save, CheckpointEncoder); true while some remains.
  // Same contract as save(): on the worker pool, never beside another call. The default has none.
  virtual bool warm(int budget) {
    (void)budget;
    return false;
  }
  // Thread-safe; for tests, the bench and the status service.
  virtual CheckpointStats stats() const = 0;
  // Where the checkpoint lives, for messages ("memory" for the test store).
  virtual std::string location() const = 0;
};

}  // namespace nvdra::claims
