#pragma once
// The CDI writer seam: puts spec files into --cdi-root and takes them out. Real implementation:
// FileSpecStore (cdi/file_spec_store.hpp, atomic and durable); test implementation:
// MemorySpecStore (cdi/memory_spec_store.hpp).
//
// Contract
// - Each change is atomic per file: a reader (the container runtime) sees the old content or
//   the new, never a torn file, also after a crash or power loss at any point.
// - apply() returns once every change in the batch is durable. Batching several claims' changes
//   into one apply() is the group-commit hook: the real store then syncs the directory once for
//   the batch instead of once per file.
// - On error apply() stops and returns the error (naming the file); changes before the failing
//   one may stay applied. Writes and removals are idempotent, so a retry converges.
// - Removing a missing file succeeds, and is no change to make durable (the real store syncs
//   nothing for a batch of such removals).
// - Blocking (fsync): call from the worker pool, never the io_context thread. All methods are
//   thread-safe; concurrent changes to different files are independent, concurrent changes to
//   the same file each land whole and the last one wins (callers serialise per claim).
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "agent/base/result.hpp"

namespace nvdra::cdi {

struct BuiltSpec;

enum class SpecOp { kWrite, kRemove };

struct SpecChange {
  SpecOp op = SpecOp::kWrite;
  std::string file_name;  // a plain name inside the store, e.g. "k8s.gpu.nvidia.com-claim_<uid>.yaml"
  std::string content;    // for kWrite

  static SpecChange write(std::string file_name, std::string content) {
    return SpecChange{SpecOp::kWrite, std::move(file_name), std::move(content)};
  }
  static SpecChange remove(std::string file_name) { return SpecChange{SpecOp::kRemove, std::move(file_name), {}}; }
  static SpecChange write(const BuiltSpec& spec);
  bool operator==(const SpecChange&) const = default;
};

// The changes that take a claim's spec out: the .yaml nvdra and upstream write and the .json
// older nvdra versions wrote.
std::vector<SpecChange> claim_removal(std::string_view vendor, std::string_view claim_uid);

class SpecStore {
 public:
  virtual ~SpecStore() = default;

  virtual Status apply(std::span<const SpecChange> changes) = 0;
  // The content of one file; kNotFound when absent.
  virtual Result<std::string> read(const std::string& file_name) = 0;
  // Spec files present (names ending in .json or .yaml), sorted: for stale-claim cleanup.
  virtual Result<std::vector<std::string>> list() = 0;

  Status write(const BuiltSpec& spec);
  Status remove_claim(std::string_view vendor, std::string_view claim_uid);
  // Writes only when the stored content differs (the driver's base spec). True when written.
  Result<bool> write_if_changed(const BuiltSpec& spec);
};

// Rejects names that are empty, contain '/', start with '.' or are too long for a file name.
Status validate_file_name(std::string_view file_name);

}  // namespace nvdra::cdi
