#include "agent/claims/checkpoint/checkpoint_encoder.hpp"

#include <boost/json/monotonic_resource.hpp>
#include <boost/json/object.hpp>
#include <boost/json/string.hpp>

#include <utility>

#include "agent/base/json_slot.hpp"

namespace nvdra::claims {
namespace {

namespace json = boost::json;

// Where a claims object goes in a skeleton: a JSON slot (json_slot.hpp), which go_json writes as
// Boost.JSON does. Every other string holding U+0001 is written the same way, so the skeletons are
// built with their keys in the file's order and searched from the start: the slots come before the
// only free-form string (nodeBootID).
constexpr std::string_view kSlot = kJsonSlotText;
json::value slot() { return json::string(kJsonSlotValue); }

// `"<uid>":<value>`: Boost.JSON's serialization of {uid: value} without its braces. The tree is
// temporary: built in an arena, as encode_checkpoint() builds its own, not a malloc per node.
std::string member(const std::string& uid, const CheckpointedClaim& c, bool v1) {
  json::storage_ptr arena = json::make_shared_resource<json::monotonic_resource>();
  json::object wrapper(arena);
  wrapper[uid] = v1 ? encode_claim_v1(c, arena) : encode_claim_v2(c, arena);
  std::string text = go_json(wrapper);
  return text.substr(1, text.size() - 2);
}

}  // namespace

void CheckpointEncoder::refresh(const Checkpoint& cp, const std::vector<std::string>* changed) {
  auto encode_one = [this](const std::string& uid, const CheckpointedClaim& c) {
    Entry e;
    e.written = saves_;
    e.v2.bytes = member(uid, c, false);
    if (c.state == ClaimState::kPrepareCompleted) e.v1.bytes = member(uid, c, true);
    members_.insert_or_assign(uid, std::move(e));
  };
  if (changed) {
    for (const auto& uid : *changed) {
      if (auto it = cp.claims.find(uid); it != cp.claims.end()) encode_one(uid, it->second);
      else members_.erase(uid);
    }
  }
  if (!changed || members_.size() != cp.claims.size()) {  // unknown base, or it was not ours
    members_.clear();
    for (const auto& [uid, c] : cp.claims) encode_one(uid, c);
    // Only the claims this save changed are new; the others were there before it (a checkpoint
    // loaded at start): their spans may be computed at once.
    for (auto& [uid, e] : members_) e.written = 0;
    if (changed)
      for (const auto& uid : *changed)
        if (auto it = members_.find(uid); it != members_.end()) it->second.written = saves_;
  }
}

void CheckpointEncoder::compute_spans() {
  int budget = kSpansPerSave;
  for (auto& [uid, e] : members_) {
    if (e.written == saves_) continue;  // written by this save
    // PrepareStarted (no v1 member): its next commit (PrepareCompleted, or its rollback) rewrites
    // it, within a few saves in a burst of prepares; warm() still gives it a span when idle.
    if (e.v1.bytes.empty()) continue;
    for (Member* m : {&e.v2, &e.v1}) {
      if (m->span || m->bytes.empty() || budget == 0) continue;
      m->span = std::make_unique<ChecksumSpan>(m->bytes, &pieces_);
      --budget;
    }
  }
}

bool CheckpointEncoder::warm(int budget) {
  for (auto& [uid, e] : members_) {
    if (e.written == saves_) continue;  // written by the last save: wait until it outlives one
    for (Member* m : {&e.v2, &e.v1}) {
      if (m->span || m->bytes.empty()) continue;
      if (budget-- == 0) return true;
      m->span = std::make_unique<ChecksumSpan>(m->bytes, &pieces_);
    }
  }
  return false;
}

uint32_t CheckpointEncoder::checksum(std::string_view skeleton, bool v1) const {
  const std::size_t at = skeleton.find(kSlot);
  GoChecksum sum;
  sum.feed(skeleton.substr(0, at));
  sum.feed("{");
  bool first = true;
  for (const auto& [uid, e] : members_) {
    const Member& m = v1 ? e.v1 : e.v2;
    if (m.bytes.empty()) continue;
    if (!first) sum.feed(",");
    first = false;
    if (m.span) sum.feed(*m.span);
    else sum.feed(m.bytes);
  }
  sum.feed("}");
  sum.feed(skeleton.substr(at + kSlot.size()));
  return sum.finish();
}

void CheckpointEncoder::append_claims(std::string& out, bool v1) const {
  out += '{';
  bool first = true;
  for (const auto& [uid, e] : members_) {
    const Member& m = v1 ? e.v1 : e.v2;
    if (m.bytes.empty()) continue;
    if (!first) out += ',';
    first = false;
    out += m.bytes;
  }
  out += '}';
}

std::string CheckpointEncoder::encode(const Checkpoint& cp, const std::vector<std::string>* changed) {
  ++saves_;
  refresh(cp, changed);
  if (cp.claims.empty()) return encode_checkpoint(cp);  // no claims objects: nothing to reuse
  compute_spans();
  bool any_completed = false;
  for (const auto& [uid, e] : members_) any_completed = any_completed || !e.v1.bytes.empty();

  json::object v2;  // the skeletons, in the file's key order (checkpoint_model.cpp)
  v2["checksum"] = 0;
  v2["preparedClaims"] = slot();
  if (!cp.node_boot_id.empty()) v2["nodeBootID"] = cp.node_boot_id;
  v2["checksum"] = checksum(go_json(v2), false);
  json::object v1;
  if (any_completed) v1["preparedClaims"] = slot();
  json::object top;
  top["checksum"] = 0;
  top["v1"] = v1;
  const std::string top_zero = go_json(top);
  top["checksum"] = any_completed ? checksum(top_zero, true) : go_checksum(top_zero);
  top["v2"] = std::move(v2);
  const std::string skeleton = go_json(top);

  std::string out;
  std::size_t total = skeleton.size();
  for (const auto& [uid, e] : members_) total += e.v2.bytes.size() + e.v1.bytes.size() + 2;
  out.reserve(total);
  std::size_t from = 0;
  for (bool is_v1 : {true, false}) {
    if (is_v1 && !any_completed) continue;
    const std::size_t at = skeleton.find(kSlot, from);
    out.append(skeleton, from, at - from);
    append_claims(out, is_v1);
    from = at + kSlot.size();
  }
  out.append(skeleton, from, std::string::npos);
  return out;
}

}  // namespace nvdra::claims
