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
// Claims whose UIDs begin with the same kGroupPrefix characters lie next to each other in the file
// (Go sorts the keys), so each such group keeps the span of its members (and the commas between) once
// every member has one: a save applies a span per group, ~256 for random UIDs, instead of one per
// claim and section, each a cache miss at 1,000 claims. A group of over kMaxGroup members (UIDs that
// are not random) is fed member by member, as before.
//
// The bytes come as pieces (encode_pieces: views of the cached members and the skeleton), so a save
// does not first copy the whole file into one string (the store writes them through a small buffer).
//
// Not thread-safe: one caller at a time (the store's save() contract).
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "agent/claims/checkpoint/checkpoint_checksum.hpp"
#include "agent/claims/checkpoint/checkpoint_model.hpp"

namespace nvdra::claims {

class CheckpointEncoder {
 public:
  static constexpr int kSpansPerSave = 8;
  static constexpr std::size_t kGroupPrefix = 2;  // random hex UIDs: 256 groups
  static constexpr std::size_t kMaxGroup = 64;

  // The bytes of `checkpoint`. `changed`: the claim UIDs put or erased since the previous call's
  // checkpoint (which must have been this encoder's last input, see reset()); nullptr: unknown,
  // every claim is serialized again.
  std::string encode(const Checkpoint& checkpoint, const std::vector<std::string>* changed);
  // The same bytes in pieces, to be written one after another: views of this encoder's memory,
  // valid until its next call.
  const std::vector<std::string_view>& encode_pieces(const Checkpoint& checkpoint,
                                                     const std::vector<std::string>* changed);
  // Computes up to `budget` spans of claims that outlived a save; true while some remain. For idle
  // time between saves: what it computes, every later save reuses.
  bool warm(int budget);
  // Forgets every claim: for when the previous input is not the base of the next `changed`
  // (a failed write that the caller will not retry as such).
  void reset();

 private:
  struct Member {
    std::string bytes;  // `"<uid>":{…}`
    std::unique_ptr<ChecksumSpan> span;  // null: not computed yet
  };
  struct Entry {
    Member section[2];  // kV2, kV1; an empty kV1: not PrepareCompleted, absent from v1
    uint64_t written = 0;  // the encode() that wrote it (saves_ then): no span before it outlives it
  };
  // The members of one UID prefix in one section: their span once each has one (stale: recompose).
  struct Group {
    std::unique_ptr<ChecksumSpan> span[2];
    bool stale[2] = {true, true};
  };
  static constexpr int kV2 = 0, kV1 = 1;
  using Members = std::map<std::string, Entry, std::less<>>;

  static std::string_view prefix_of(std::string_view uid);
  void refresh(const Checkpoint& checkpoint, const std::vector<std::string>* changed);
  void put(const std::string& uid, const CheckpointedClaim& claim);
  void erase(const std::string& uid);
  std::vector<Members::iterator>::iterator position(std::string_view uid);
  void stale(std::string_view uid);  // its group's spans are composed again before use
  void give_span(Members::iterator it, int section);
  template <class Eligible>
  bool spans_for(int budget, Eligible eligible);
  void compute_spans();
  uint32_t checksum(std::string_view skeleton, int section);
  void feed_group(GoChecksum& sum, Group& group, std::string_view prefix, int section, bool& first);
  void append_pieces(int section);

  Members members_;  // by claim UID, the order of Go's sorted map keys
  // members_ in its order, as a list: the walk that lays out the file's pieces reads it without
  // chasing the tree's nodes one after another (at 1,000 claims that walk was most of a save's CPU).
  std::vector<Members::iterator> order_;
  std::map<std::string, Group, std::less<>> groups_;  // by UID prefix
  std::set<std::string> unspanned_;  // claims with a member that has no span yet
  std::size_t completed_ = 0;  // entries with a v1 member
  uint64_t saves_ = 0;  // encode() calls
  SpanPieces pieces_;   // the spans of the JSON that recurs from claim to claim
  std::string skeleton_;  // the last encode's, with the views below
  std::vector<std::string_view> out_;
};

}  // namespace nvdra::claims
