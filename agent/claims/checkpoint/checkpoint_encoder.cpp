#include "agent/claims/checkpoint/checkpoint_encoder.hpp"

#include <boost/json/monotonic_resource.hpp>
#include <boost/json/object.hpp>
#include <boost/json/string.hpp>

#include <algorithm>
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

// The group a UID belongs to: its first kGroupPrefix characters (all of a shorter UID). Members of a
// group are contiguous in the map, and groups sort as their members do.
std::string_view CheckpointEncoder::prefix_of(std::string_view uid) {
  return uid.substr(0, std::min(uid.size(), kGroupPrefix));
}

void CheckpointEncoder::reset() {
  members_.clear();
  order_.clear();
  groups_.clear();
  unspanned_.clear();
  completed_ = 0;
}

void CheckpointEncoder::stale(std::string_view uid) {
  auto g = groups_.find(prefix_of(uid));
  if (g == groups_.end()) g = groups_.emplace(std::string(prefix_of(uid)), Group{}).first;
  g->second.stale[kV2] = g->second.stale[kV1] = true;
}

void CheckpointEncoder::put(const std::string& uid, const CheckpointedClaim& c) {
  Entry e;  // made before anything changes, so a throw leaves the encoder as it was
  e.written = saves_;
  e.section[kV2].bytes = member(uid, c, false);
  if (c.state == ClaimState::kPrepareCompleted) e.section[kV1].bytes = member(uid, c, true);
  auto [it, inserted] = members_.try_emplace(uid);
  if (inserted) order_.insert(position(uid), it);
  if (!inserted && !it->second.section[kV1].bytes.empty()) --completed_;
  if (!e.section[kV1].bytes.empty()) ++completed_;
  it->second = std::move(e);
  unspanned_.insert(uid);
  stale(uid);
}

// Where `uid` is, or goes, in order_.
std::vector<CheckpointEncoder::Members::iterator>::iterator CheckpointEncoder::position(std::string_view uid) {
  return std::lower_bound(order_.begin(), order_.end(), uid,
                          [](const Members::iterator& it, std::string_view key) { return it->first < key; });
}

void CheckpointEncoder::erase(const std::string& uid) {
  const auto it = members_.find(uid);
  if (it == members_.end()) return;
  if (!it->second.section[kV1].bytes.empty()) --completed_;
  order_.erase(position(uid));
  members_.erase(it);
  unspanned_.erase(uid);
  const std::string_view prefix = prefix_of(uid);
  if (const auto next = members_.lower_bound(prefix); next != members_.end() && prefix_of(next->first) == prefix)
    stale(uid);
  else if (const auto g = groups_.find(prefix); g != groups_.end())
    groups_.erase(g);  // its last member: a group exists while it has members
}

void CheckpointEncoder::refresh(const Checkpoint& cp, const std::vector<std::string>* changed) {
  if (changed) {
    for (const auto& uid : *changed) {
      if (auto it = cp.claims.find(uid); it != cp.claims.end()) put(uid, it->second);
      else erase(uid);
    }
  }
  if (!changed || members_.size() != cp.claims.size()) {  // unknown base, or it was not ours
    reset();
    for (const auto& [uid, c] : cp.claims) put(uid, c);
    // Only the claims this save changed are new; the others were there before it (a checkpoint
    // loaded at start): their spans may be computed at once.
    for (auto& [uid, e] : members_) e.written = 0;
    if (changed)
      for (const auto& uid : *changed)
        if (auto it = members_.find(uid); it != members_.end()) it->second.written = saves_;
  }
}

void CheckpointEncoder::give_span(Members::iterator it, int section) {
  Entry& e = it->second;
  e.section[section].span = std::make_unique<ChecksumSpan>(e.section[section].bytes, &pieces_);
  stale(it->first);
  const bool v1_done = e.section[kV1].bytes.empty() || e.section[kV1].span;
  if (e.section[kV2].span && v1_done) unspanned_.erase(it->first);
}

// Up to `budget` spans for the claims `eligible` accepts, in UID order; true when some were left.
template <class Eligible>
bool CheckpointEncoder::spans_for(int budget, Eligible eligible) {
  for (auto u = unspanned_.begin(); u != unspanned_.end();) {
    const auto it = members_.find(*u);
    ++u;  // give_span() may drop the claim from unspanned_
    if (it == members_.end() || !eligible(it->second)) continue;
    for (int section : {kV2, kV1}) {
      const Member& m = it->second.section[section];
      if (m.span || m.bytes.empty()) continue;
      if (budget-- == 0) return true;
      give_span(it, section);
    }
  }
  return false;
}

void CheckpointEncoder::compute_spans() {
  // Not the claims this save wrote, nor PrepareStarted ones (no v1 member): the next commit
  // (PrepareCompleted, or the rollback) rewrites them, within a few saves in a burst of prepares;
  // warm() still gives them a span when idle.
  spans_for(kSpansPerSave, [this](const Entry& e) { return e.written != saves_ && !e.section[kV1].bytes.empty(); });
}

bool CheckpointEncoder::warm(int budget) {
  // Not the claims the last save wrote: wait until they outlive one.
  return spans_for(budget, [this](const Entry& e) { return e.written != saves_; });
}

// One group's members of `section`: its span when it is current, else the span composed now when
// every member has one (and the group is small enough for that to pay), else member by member.
void CheckpointEncoder::feed_group(GoChecksum& sum, Group& group, std::string_view prefix, int section, bool& first) {
  if (!group.stale[section]) {
    if (!group.span[section]) return;  // no member in this section
    if (!first) sum.feed(",");
    first = false;
    sum.feed(*group.span[section]);
    return;
  }
  std::size_t count = 0;
  bool spanned = true;
  auto begin = members_.lower_bound(prefix);
  auto end = begin;
  for (; end != members_.end() && prefix_of(end->first) == prefix; ++end) {
    const Member& m = end->second.section[section];
    if (m.bytes.empty()) continue;
    ++count;
    spanned = spanned && m.span;
  }
  group.span[section].reset();
  if (count > 0 && count <= kMaxGroup && spanned) {
    SpanComposer composer;
    bool first_member = true;
    for (auto it = begin; it != end; ++it) {
      const Member& m = it->second.section[section];
      if (m.bytes.empty()) continue;
      if (!first_member) composer.feed(",");
      first_member = false;
      composer.feed(*m.span);
    }
    group.span[section] = std::make_unique<ChecksumSpan>(composer.finish());
    group.stale[section] = false;
    return feed_group(sum, group, prefix, section, first);
  }
  group.stale[section] = count > 0;  // with no member in this section it stays current: nothing to feed
  for (auto it = begin; it != end; ++it) {
    const Member& m = it->second.section[section];
    if (m.bytes.empty()) continue;
    if (!first) sum.feed(",");
    first = false;
    if (m.span) sum.feed(*m.span);
    else sum.feed(m.bytes);
  }
}

uint32_t CheckpointEncoder::checksum(std::string_view skeleton, int section) {
  const std::size_t at = skeleton.find(kSlot);
  GoChecksum sum;
  sum.feed(skeleton.substr(0, at));
  sum.feed("{");
  bool first = true;
  for (auto& [prefix, group] : groups_) feed_group(sum, group, prefix, section, first);
  sum.feed("}");
  sum.feed(skeleton.substr(at + kSlot.size()));
  return sum.finish();
}

void CheckpointEncoder::append_pieces(int section) {
  out_.push_back("{");
  bool first = true;
  for (const auto& it : order_) {
    const Member& m = it->second.section[section];
    if (m.bytes.empty()) continue;
    if (!first) out_.push_back(",");
    first = false;
    out_.push_back(m.bytes);
  }
  out_.push_back("}");
}

const std::vector<std::string_view>& CheckpointEncoder::encode_pieces(const Checkpoint& cp,
                                                                      const std::vector<std::string>* changed) {
  ++saves_;
  out_.clear();
  refresh(cp, changed);
  if (cp.claims.empty()) {  // no claims objects: nothing to reuse
    skeleton_ = encode_checkpoint(cp);
    out_.push_back(skeleton_);
    return out_;
  }
  compute_spans();
  const bool any_completed = completed_ > 0;

  json::object v2;  // the skeletons, in the file's key order (checkpoint_model.cpp)
  v2["checksum"] = 0;
  v2["preparedClaims"] = slot();
  if (!cp.node_boot_id.empty()) v2["nodeBootID"] = cp.node_boot_id;
  v2["checksum"] = checksum(go_json(v2), kV2);
  json::object v1;
  if (any_completed) v1["preparedClaims"] = slot();
  json::object top;
  top["checksum"] = 0;
  top["v1"] = v1;
  const std::string top_zero = go_json(top);
  top["checksum"] = any_completed ? checksum(top_zero, kV1) : go_checksum(top_zero);
  top["v2"] = std::move(v2);
  skeleton_ = go_json(top);

  const std::string_view skeleton = skeleton_;
  std::size_t from = 0;
  for (int section : {kV1, kV2}) {
    if (section == kV1 && !any_completed) continue;
    const std::size_t at = skeleton.find(kSlot, from);
    out_.push_back(skeleton.substr(from, at - from));
    append_pieces(section);
    from = at + kSlot.size();
  }
  out_.push_back(skeleton.substr(from));
  return out_;
}

std::string CheckpointEncoder::encode(const Checkpoint& cp, const std::vector<std::string>* changed) {
  const auto& pieces = encode_pieces(cp, changed);
  std::size_t total = 0;
  for (auto p : pieces) total += p.size();
  std::string out;
  out.reserve(total);
  for (auto p : pieces) out += p;
  return out;
}

}  // namespace nvdra::claims
