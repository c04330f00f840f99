#include "agent/claims/checkpoint_model.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <charconv>

namespace nvdra::claims {
namespace {

namespace json = boost::json;

Error corrupt(const std::string& path, const std::string& why) {
  return Error{ErrorCode::kFailedPrecondition, "checkpoint " + path + " is corrupt: " + why, {}, path};
}

// Go struct field order of upstream's PreparedClaim (v2): checkpointState, status,
// preparedDevices, name, namespace, abortedAt; all but status omit-empty.
json::object encode_claim_v2(const CheckpointedClaim& c) {
  json::object o;
  o["checkpointState"] = to_string(c.state);
  o["status"] = c.status;
  if (!c.prepared_devices.empty()) o["preparedDevices"] = c.prepared_devices;
  if (!c.name.empty()) o["name"] = c.name;
  if (!c.ns.empty()) o["namespace"] = c.ns;
  if (!c.aborted_at.empty()) o["abortedAt"] = c.aborted_at;
  return o;
}

json::object encode_v1(const Checkpoint& cp) {
  json::object claims;
  for (const auto& [uid, c] : cp.claims) {
    if (c.state != ClaimState::kPrepareCompleted) continue;  // v1 knows only completed claims
    json::object o;
    o["status"] = c.status;
    if (!c.prepared_devices.empty()) o["preparedDevices"] = c.prepared_devices;
    claims[uid] = std::move(o);
  }
  json::object v1;
  if (!claims.empty()) v1["preparedClaims"] = std::move(claims);
  return v1;
}

json::object encode_v2(const Checkpoint& cp) {
  json::object v2;
  v2["checksum"] = 0;
  json::object claims;
  for (const auto& [uid, c] : cp.claims) claims[uid] = encode_claim_v2(c);
  if (!claims.empty()) v2["preparedClaims"] = std::move(claims);
  if (!cp.node_boot_id.empty()) v2["nodeBootID"] = cp.node_boot_id;
  return v2;
}

// The top-level checksum covers {"checksum":0,"v1":…} only: upstream's v1 struct predates v2.
uint32_t top_checksum(const json::value& v1) {
  json::object top;
  top["checksum"] = 0;
  top["v1"] = v1;
  return go_checksum(go_json(top));
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

Result<CheckpointedClaim> decode_claim(const std::string& uid, const json::value& v, bool from_v2,
                                       const std::string& path) {
  if (!v.is_object()) return corrupt(path, "claim " + uid + " is not an object");
  const auto& o = v.get_object();
  CheckpointedClaim c;
  if (from_v2) {
    auto st = parse_state(o.if_contains("checkpointState"), path, uid);
    if (!st) return std::move(st).error();
    c.state = *st;
  } else {
    c.state = ClaimState::kPrepareCompleted;
  }
  if (const auto* s = o.if_contains("status")) c.status = *s;
  if (const auto* d = o.if_contains("preparedDevices"); d && !d->is_null()) {
    if (!d->is_array()) return corrupt(path, "claim " + uid + " preparedDevices is not a list");
    c.prepared_devices = d->get_array();
  }
  c.name = string_field(o, "name");
  c.ns = string_field(o, "namespace");
  c.aborted_at = string_field(o, "abortedAt");
  return c;
}

}  // namespace

std::string_view to_string(ClaimState state) {
  switch (state) {
    case ClaimState::kPrepareStarted: return "PrepareStarted";
    case ClaimState::kPrepareCompleted: return "PrepareCompleted";
    case ClaimState::kPrepareAborted: return "PrepareAborted";
  }
  return "Unknown";
}

uint32_t go_checksum(std::string_view bytes) {
  uint32_t h = 2166136261u;
  auto feed = [&h](char c) {
    h ^= static_cast<uint8_t>(c);
    h *= 16777619u;
  };
  for (char c : std::string_view("([]uint8)[")) feed(c);
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    if (i) feed(' ');
    char digits[4];
    auto r = std::to_chars(digits, digits + sizeof digits, static_cast<unsigned>(static_cast<uint8_t>(bytes[i])));
    for (char* p = digits; p != r.ptr; ++p) feed(*p);
  }
  feed(']');
  return h;
}

std::string go_json(const json::value& value) {
  const std::string plain = json::serialize(value);
  std::string out;
  out.reserve(plain.size() + plain.size() / 16);
  // These bytes can only occur inside strings, so a byte-level rewrite cannot touch structure.
  for (std::size_t i = 0; i < plain.size(); ++i) {
    const char c = plain[i];
    if (c == '<') out += "\\u003c";
    else if (c == '>') out += "\\u003e";
    else if (c == '&') out += "\\u0026";
    else if (c == '\xE2' && i + 2 < plain.size() && plain[i + 1] == '\x80' && (plain[i + 2] == '\xA8' || plain[i + 2] == '\xA9')) {
      out += plain[i + 2] == '\xA8' ? "\\u2028" : "\\u2029";
      i += 2;
    } else {
      out += c;
    }
  }
  return out;
}

std::string encode_checkpoint(const Checkpoint& checkpoint) {
  json::value v1 = encode_v1(checkpoint);
  json::object v2 = encode_v2(checkpoint);
  v2["checksum"] = go_checksum(go_json(v2));
  json::object top;
  top["checksum"] = top_checksum(v1);
  top["v1"] = std::move(v1);
  top["v2"] = std::move(v2);
  return go_json(top);
}

Result<Checkpoint> decode_checkpoint(std::string_view bytes, const std::string& path) {
  boost::system::error_code ec;
  json::value root = json::parse(bytes, ec);
  if (ec) return corrupt(path, "not valid JSON (" + ec.message() + "; " + std::to_string(bytes.size()) + " bytes)");
  if (!root.is_object()) return corrupt(path, "the top level is not an object");
  auto& top = root.get_object();
  auto top_sum = stored_checksum(top, path, "the file");
  if (!top_sum) return std::move(top_sum).error();
  const json::value v1 = top.contains("v1") ? top.at("v1") : json::value(json::object());
  if (const auto computed = top_checksum(v1); computed != *top_sum)
    return corrupt(path, "checksum mismatch (stored " + std::to_string(*top_sum) + ", computed " +
                             std::to_string(computed) + ")");
  Checkpoint out;
  if (auto* v2v = top.if_contains("v2"); v2v && !v2v->is_null()) {
    if (!v2v->is_object()) return corrupt(path, "v2 is not an object");
    json::object v2 = v2v->get_object();
    auto v2_sum = stored_checksum(v2, path, "v2");
    if (!v2_sum) return std::move(v2_sum).error();
    v2["checksum"] = 0;
    if (const auto computed = go_checksum(go_json(v2)); computed != *v2_sum)
      return corrupt(path, "v2 checksum mismatch (stored " + std::to_string(*v2_sum) + ", computed " +
                               std::to_string(computed) + ")");
    out.node_boot_id = string_field(v2, "nodeBootID");
    if (const auto* claims = v2.if_contains("preparedClaims"); claims && claims->is_object()) {
      for (const auto& [uid, c] : claims->get_object()) {
        auto claim = decode_claim(std::string(uid), c, true, path);
        if (!claim) return std::move(claim).error();
        out.claims[std::string(uid)] = std::move(*claim);
      }
    }
    return out;
  }
  // A checkpoint written before v2 existed (upstream downgrade path).
  if (const auto* claims = v1.is_object() ? v1.get_object().if_contains("preparedClaims") : nullptr;
      claims && claims->is_object()) {
    for (const auto& [uid, c] : claims->get_object()) {
      auto claim = decode_claim(std::string(uid), c, false, path);
      if (!claim) return std::move(claim).error();
      out.claims[std::string(uid)] = std::move(*claim);
    }
  }
  return out;
}

}  // namespace nvdra::claims
