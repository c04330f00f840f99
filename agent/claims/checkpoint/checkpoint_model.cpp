#include "agent/claims/checkpoint/checkpoint_model.hpp"

#include <boost/json/monotonic_resource.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include "agent/claims/checkpoint/checkpoint_checksum.hpp"


namespace nvdra::claims {
namespace {

namespace json = boost::json;

Error corrupt(const std::string& path, const std::string& why) {
  return Error{ErrorCode::kFailedPrecondition, "checkpoint " + path + " is corrupt: " + why, {}, path};
}

json::object encode_v1(const Checkpoint& cp, const json::storage_ptr& sp) {
  json::object claims(sp);
  for (const auto& [uid, c] : cp.claims) {
    if (c.state != ClaimState::kPrepareCompleted) continue;  // v1 knows only completed claims
    claims[uid] = encode_claim_v1(c, sp);
  }
  json::object v1(sp);
  if (!claims.empty()) v1["preparedClaims"] = std::move(claims);
  return v1;
}

json::object encode_v2(const Checkpoint& cp, const json::storage_ptr& sp) {
  json::object v2(sp);
  v2["checksum"] = 0;
  json::object claims(sp);
  for (const auto& [uid, c] : cp.claims) claims[uid] = encode_claim_v2(c, sp);
  if (!claims.empty()) v2["preparedClaims"] = std::move(claims);
  if (!cp.node_boot_id.empty()) v2["nodeBootID"] = cp.node_boot_id;
  return v2;
}

// The top-level checksum covers {"checksum":0,"v1":…} only: upstream's v1 struct predates v2. Fed
// in pieces, the bytes go_json writes for that object, without copying v1 into one (~1.5 ms at
// 1,000 claims, issue #33).
uint32_t top_checksum(const json::value& v1) {
  GoChecksum sum;
  sum.feed(R"({"checksum":0,"v1":)");
  sum.feed(go_json(v1));
  sum.feed("}");
  return sum.finish();
}

Result<uint32_t> stored_checksum(const json::object& o, const std::string& path, std::string_view where) {
  const auto* v = o.if_contains("checksum");
  if (!v) return corrupt(path, std::string(where) + " has no checksum");
  if (v->is_uint64() && v->get_uint64() <= UINT32_MAX) return static_cast<uint32_t>(v->get_uint64());
  if (v->is_int64() && v->get_int64() >= 0 && v->get_int64() <= UINT32_MAX) return static_cast<uint32_t>(v->get_int64());
  return corrupt(path, std::string(where) + " checksum is not a uint32");
}

Result<ClaimState> parse_state(const json::value* v, const std::string& path, const std::string& uid) {
  if (v && v->is_string()) {
    const auto s = v->get_string();
    for (auto st : {ClaimState::kPrepareStarted, ClaimState::kPrepareCompleted, ClaimState::kPrepareAborted})
      if (s == to_string(st)) return st;
  }
  return corrupt(path, "claim " + uid + " has checkpointState " + (v ? json::serialize(*v) : std::string("(none)")) +
                           ", expected PrepareStarted, PrepareCompleted or PrepareAborted");
}

std::string string_field(const json::object& o, std::string_view key) {
  const auto* v = o.if_contains(key);
  return v && v->is_string() ? std::string(v->get_string()) : std::string();
}

// Takes the claim's JSON trees out of `v` (the parsed file's, verified and not read again): a move,
// where a copy of every claim's status and devices was a third of a load at 1,000 claims (issue #33).
Result<CheckpointedClaim> decode_claim(const std::string& uid, json::value& v, bool from_v2, const std::string& path) {
  if (!v.is_object()) return corrupt(path, "claim " + uid + " is not an object");
  auto& o = v.get_object();
  CheckpointedClaim c;
  if (from_v2) {
    auto st = parse_state(o.if_contains("checkpointState"), path, uid);
    if (!st) return std::move(st).error();
    c.state = *st;
  } else {
    c.state = ClaimState::kPrepareCompleted;
  }
  if (auto* s = o.if_contains("status")) c.status = std::move(*s);
  if (auto* d = o.if_contains("preparedDevices"); d && !d->is_null()) {
    if (!d->is_array()) return corrupt(path, "claim " + uid + " preparedDevices is not a list");
    c.prepared_devices = std::move(d->get_array());
  }
  c.name = string_field(o, "name");
  c.ns = string_field(o, "namespace");
  c.aborted_at = string_field(o, "abortedAt");
  return c;
}

}  // namespace

// Go struct field order of upstream's PreparedClaim (v2): checkpointState, status,
// preparedDevices, name, namespace, abortedAt; all but status omit-empty.
json::object encode_claim_v2(const CheckpointedClaim& c, const json::storage_ptr& sp) {
  json::object o(sp);
  o["checkpointState"] = to_string(c.state);
  o["status"] = c.status;
  if (!c.prepared_devices.empty()) o["preparedDevices"] = c.prepared_devices;
  if (!c.name.empty()) o["name"] = c.name;
  if (!c.ns.empty()) o["namespace"] = c.ns;
  if (!c.aborted_at.empty()) o["abortedAt"] = c.aborted_at;
  return o;
}

// Upstream's v1 PreparedClaim: status, preparedDevices (omit-empty).
json::object encode_claim_v1(const CheckpointedClaim& c, const json::storage_ptr& sp) {
  json::object o(sp);
  o["status"] = c.status;
  if (!c.prepared_devices.empty()) o["preparedDevices"] = c.prepared_devices;
  return o;
}


std::string_view to_string(ClaimState state) {
  switch (state) {
    case ClaimState::kPrepareStarted: return "PrepareStarted";
    case ClaimState::kPrepareCompleted: return "PrepareCompleted";
    case ClaimState::kPrepareAborted: return "PrepareAborted";
  }
  return "Unknown";
}

std::string go_json(const json::value& value) {
  std::string plain = json::serialize(value);
  // Go escapes <, > and & (and U+2028/9, which start with 0xE2); most files have none of them.
  // These bytes can only occur inside strings, so a byte-level rewrite cannot touch structure.
  // (Not find_first_of: libstdc++ calls memchr once per byte for it.)
  auto special_from = [&plain](std::size_t at) {
    for (; at < plain.size(); ++at) {
      const char c = plain[at];
      if (c == '<' || c == '>' || c == '&' || c == '\xE2') return at;
    }
    return std::string::npos;
  };
  std::size_t i = special_from(0);
  if (i == std::string::npos) return plain;
  std::string out;
  out.reserve(plain.size() + plain.size() / 16);
  std::size_t from = 0;
  for (; i != std::string::npos; i = special_from(i)) {
    const char c = plain[i];
    const char* escaped = c == '<' ? "\\u003c" : c == '>' ? "\\u003e" : c == '&' ? "\\u0026" : nullptr;
    std::size_t width = 1;
    if (!escaped && i + 2 < plain.size() && plain[i + 1] == '\x80' &&
        (plain[i + 2] == '\xA8' || plain[i + 2] == '\xA9')) {
      escaped = plain[i + 2] == '\xA8' ? "\\u2028" : "\\u2029";
      width = 3;
    }
    if (escaped) {
      out.append(plain, from, i - from).append(escaped);
      from = i + width;
    }
    i += width;
  }
  out.append(plain, from, std::string::npos);
  return out;
}

std::string encode_checkpoint(const Checkpoint& checkpoint) {
  // Every value below is temporary: one arena for all of them instead of a malloc per node.
  json::storage_ptr arena = json::make_shared_resource<json::monotonic_resource>();
  json::object v2 = encode_v2(checkpoint, arena);
  v2["checksum"] = go_checksum(go_json(v2));
  json::object top(arena);
  top["checksum"] = 0;
  top["v1"] = encode_v1(checkpoint, arena);
  top["checksum"] = go_checksum(go_json(top));  // {"checksum":0,"v1":…}: v1 predates v2
  top["v2"] = std::move(v2);
  return go_json(top);
}

Result<Checkpoint> decode_checkpoint(std::string_view bytes, const std::string& path) {
  boost::system::error_code ec;
  json::value root = json::parse(bytes, ec);
  if (ec) return corrupt(path, "not valid JSON (" + ec.message() + "; " + std::to_string(bytes.size()) + " bytes)");
  if (!root.is_object()) return corrupt(path, "the top level is not an object");
  auto& top = root.get_object();
  // A key of a newer format: its writer may keep there what v1/v2 no longer say (field "version").
  for (const auto& [key, value] : top)
    if (key != "checksum" && key != "v1" && key != "v2")
      return Error{ErrorCode::kFailedPrecondition,
                   "checkpoint " + path + " is of an unknown version: top-level key \"" + std::string(key) +
                       "\" (this agent reads checksum, v1 and v2)",
                   {}, "version"};
  auto top_sum = stored_checksum(top, path, "the file");
  if (!top_sum) return std::move(top_sum).error();
  json::value no_v1 = json::object();
  json::value& v1 = top.contains("v1") ? top.at("v1") : no_v1;
  if (const auto computed = top_checksum(v1); computed != *top_sum)
    return corrupt(path, "checksum mismatch (stored " + std::to_string(*top_sum) + ", computed " +
                             std::to_string(computed) + ")");
  Checkpoint out;
  if (auto* v2v = top.if_contains("v2"); v2v && !v2v->is_null()) {
    if (!v2v->is_object()) return corrupt(path, "v2 is not an object");
    json::object& v2 = v2v->get_object();  // the parsed tree's own: zeroed and taken apart in place
    auto v2_sum = stored_checksum(v2, path, "v2");
    if (!v2_sum) return std::move(v2_sum).error();
    v2["checksum"] = 0;
    if (const auto computed = go_checksum(go_json(v2)); computed != *v2_sum)
      return corrupt(path, "v2 checksum mismatch (stored " + std::to_string(*v2_sum) + ", computed " +
                               std::to_string(computed) + ")");
    out.node_boot_id = string_field(v2, "nodeBootID");
    if (auto* claims = v2.if_contains("preparedClaims"); claims && claims->is_object()) {
      for (auto& [uid, c] : claims->get_object()) {
        auto claim = decode_claim(std::string(uid), c, true, path);
        if (!claim) return std::move(claim).error();
        out.claims[std::string(uid)] = std::move(*claim);
      }
    }
    return out;
  }
  // A checkpoint written before v2 existed (upstream downgrade path).
  if (auto* claims = v1.is_object() ? v1.get_object().if_contains("preparedClaims") : nullptr;
      claims && claims->is_object()) {
    for (auto& [uid, c] : claims->get_object()) {
      auto claim = decode_claim(std::string(uid), c, false, path);
      if (!claim) return std::move(claim).error();
      out.claims[std::string(uid)] = std::move(*claim);
    }
  }
  return out;
}

}  // namespace nvdra::claims
