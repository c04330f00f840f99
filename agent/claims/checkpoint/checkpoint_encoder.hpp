#pragma once
// CheckpointEncoder — encode_checkpoint() with a memory: the same bytes, but a save after a few
// claims changed costs about what those claims cost, plus copying the file's bytes, instead of
// re-serializing and re-hashing every claim (at 1,000 claims that was ~25 ms of CPU per save).
//
// It keeps, per claim, the claim's members of the v2 and v1 "preparedClaims" objects as Go's
// encoding/json writes them (`"<uid>":{…}`, each serialized by Boost.JSON through go_json) and
// their ChecksumSpan. A save serializes only the changed claims, joins the members into a
// skeleton of the file that Boost.JSON writes with a placeholder where each claims object goes,
// and computes both checksums from the cached spans. Bytes equal encode_checkpoint()'s for every
// checkpoint (checkpoint_encoder_test compares them).
//
// A span costs 10-30× hashing its bytes once (about half that once the JSON that recurs from claim to
// claim is kept in pieces_: a claim's span then steps through its own values only), so a save
// computes it only for a PrepareCompleted claim that outlived a save unchanged (a PrepareStarted
// claim is rewritten by its next commit, and one of a node with a single claim never pays for it),
// and at most kSpansPerSave per save; the others are hashed plainly until their turn. The rest are
// computed in idle time (warm(), which the committer runs on the worker pool between saves): a node
// that prepared 1,000 claims in a few large batches otherwise hashed most of them plainly on every
// save for the next hundred saves.
//
// Not thread-safe: one caller at a time (the store's save() contract).
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "agent/claims/checkpoint/checkpoint_checksum.hpp"
#include "agent/claims/checkpoint/checkpoint_model.hpp"

namespace nvdra::claims {

class CheckpointEncoder {
 public:
  static constexpr int kSpansPerSave = 8;

  // The bytes of `checkpoint`. `changed`: the claim UIDs put or erased since the previous call's
  // checkpoint (which must have been this encoder's last input, see reset()); nullptr: unknown,
  // every claim is serialized again.
  std::string encode(const Checkpoint& checkpoint, const std::vector<std::string>* changed);
  // Computes up to `budget` spans of claims that outlived a save; true while some remain. For idle
  // time between saves: what it computes, every later save reuses.
  bool warm(int budget);
  // Forgets every claim: for when the previous input is not the base of the next `changed`
  // (a failed write that the caller will not retry as such).
  void reset() { members_.clear(); }

 private:
  struct Member {
    std::string bytes;  // `"<uid>":{…}`
    std::unique_ptr<ChecksumSpan> span;  // null: not computed yet
  };
  struct Entry {
    Member v2;
    Member v1;  // empty bytes: not PrepareCompleted, absent from v1
    uint64_t written = 0;  // the encode() that wrote it (saves_ then): no span before it outlives it
  };
  void refresh(const Checkpoint& checkpoint, const std::vector<std::string>* changed);
  void compute_spans();
  uint32_t checksum(std::string_view skeleton, bool v1) const;
  void append_claims(std::string& out, bool v1) const;

  std::map<std::string, Entry> members_;  // by claim UID, the order of Go's sorted map keys
  uint64_t saves_ = 0;  // encode() calls
  SpanPieces pieces_;   // the spans of the JSON that recurs from claim to claim
};

}  // namespace nvdra::claims
