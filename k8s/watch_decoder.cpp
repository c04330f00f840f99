#include "k8s/watch_decoder.hpp"

#include <simdjson.h>

#include <algorithm>

namespace nvdra::k8s {
namespace {

namespace od = simdjson::ondemand;

bool event_type_from(std::string_view text, WatchEventType& type) {
  if (text == "ADDED") type = WatchEventType::kAdded;
  else if (text == "MODIFIED") type = WatchEventType::kModified;
  else if (text == "DELETED") type = WatchEventType::kDeleted;
  else if (text == "BOOKMARK") type = WatchEventType::kBookmark;
  else if (text == "ERROR") type = WatchEventType::kError;
  else return false;
  return true;
}

ApiError bad_event(std::string what) {
  return make_local_error(kReasonBadResponse, "watch event: " + what);
}

// Reads metadata.{name,namespace,resourceVersion} of the event's object.
simdjson::error_code read_metadata(od::object& object, WatchEvent& event) {
  od::object meta;
  auto err = object.find_field_unordered("metadata").get_object().get(meta);
  if (err == simdjson::NO_SUCH_FIELD) return simdjson::SUCCESS;  // Status objects have none
  if (err) return err;
  for (auto field : meta) {
    std::string_view key;
    if ((err = field.unescaped_key().get(key))) return err;
    std::string* target = key == "name" ? &event.name
                          : key == "namespace" ? &event.ns
                          : key == "resourceVersion" ? &event.resource_version
                          : nullptr;
    if (target == nullptr) continue;
    std::string_view text;
    if ((err = field.value().get_string().get(text))) return err;
    target->assign(text);
  }
  return simdjson::SUCCESS;
}

}  // namespace

struct WatchDecoder::Parser {
  od::parser parser;
};

WatchDecoder::WatchDecoder(std::size_t max_event_bytes)
    : max_event_bytes_(max_event_bytes), parser_(std::make_unique<Parser>()) {}

WatchDecoder::~WatchDecoder() = default;

DecodedFrame WatchDecoder::decode_line(std::string_view line) {
  // simdjson reads up to SIMDJSON_PADDING bytes past the end: give it a padded copy when the line
  // does not sit in our own buffer with room behind it.
  simdjson::padded_string owned;
  const char* data = line.data();
  std::size_t capacity = line.size() + simdjson::SIMDJSON_PADDING;
  const char* buf_begin = buffer_.data();
  if (data >= buf_begin && data + line.size() <= buf_begin + buffer_.size() &&
      static_cast<std::size_t>(buf_begin + buffer_.capacity() - data) >= capacity) {
    capacity = static_cast<std::size_t>(buf_begin + buffer_.capacity() - data);
  } else {
    owned = simdjson::padded_string(line);
    data = owned.data();
  }
  od::document doc;
  if (auto err = parser_->parser.iterate(data, line.size(), capacity).get(doc)) {
    return bad_event(std::string("not JSON: ") + simdjson::error_message(err));
  }
  od::object root;
  if (doc.get_object().get(root)) return bad_event("not a JSON object");
  WatchEvent event;
  bool have_type = false;
  bool have_object = false;
  for (auto field : root) {
    std::string_view key;
    if (field.unescaped_key().get(key)) return bad_event("unreadable key");
    if (key == "type") {
      std::string_view text;
      if (field.value().get_string().get(text)) return bad_event("\"type\" is not a string");
      if (!event_type_from(text, event.type)) {
        return bad_event("unknown type \"" + std::string(text.substr(0, 40)) +
                         "\" (allowed: ADDED, MODIFIED, DELETED, BOOKMARK, ERROR)");
      }
      have_type = true;
    } else if (key == "object") {
      od::object object;
      if (field.value().get_object().get(object)) return bad_event("\"object\" is not a JSON object");
      std::string_view raw;
      if (object.raw_json().get(raw)) return bad_event("\"object\" is malformed");
      event.object.assign(raw);
      bool rewound = false;
      if (object.reset().get(rewound) || read_metadata(object, event)) {
        return bad_event("\"object.metadata\" is malformed");
      }
      have_object = true;
    }
  }
  if (!have_type) return bad_event("missing \"type\"");
  if (!have_object) return bad_event("missing \"object\"");
  return event;
}

void WatchDecoder::feed(std::string_view bytes, std::vector<DecodedFrame>& out) {
  while (!bytes.empty()) {
    if (skipping_) {
      const auto nl = bytes.find('\n');
      skipped_bytes_ += nl == std::string_view::npos ? bytes.size() : nl;
      if (nl == std::string_view::npos) return;
      bytes.remove_prefix(nl + 1);
      skipping_ = false;
      out.emplace_back(make_local_error(kReasonEventTooLarge,
                                        "watch event of " + std::to_string(skipped_bytes_) +
                                            " bytes exceeds the limit of " + std::to_string(max_event_bytes_) +
                                            " bytes; skipped"));
      skipped_bytes_ = 0;
      continue;
    }
    const auto nl = bytes.find('\n');
    const std::size_t take = nl == std::string_view::npos ? bytes.size() : nl + 1;
    if (pending_bytes() + take - (nl == std::string_view::npos ? 0 : 1) > max_event_bytes_) {
      // The event is too large: drop what we hold and skip to its end without buffering it.
      skipped_bytes_ = pending_bytes();
      buffer_.clear();
      consumed_ = 0;
      skipping_ = true;
      continue;
    }
    // Reserve the padding simdjson reads past the end, once per growth, not per event.
    if (buffer_.capacity() < buffer_.size() + take + simdjson::SIMDJSON_PADDING) {
      if (consumed_ > 0) {
        buffer_.erase(0, consumed_);
        consumed_ = 0;
      }
      buffer_.reserve(std::max(buffer_.capacity() * 2, buffer_.size() + take + simdjson::SIMDJSON_PADDING));
    }
    buffer_.append(bytes.data(), take);
    bytes.remove_prefix(take);
    if (nl == std::string_view::npos) return;
    std::string_view line(buffer_.data() + consumed_, buffer_.size() - consumed_ - 1);
    consumed_ = buffer_.size();
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
    if (!line.empty()) out.push_back(decode_line(line));
    if (consumed_ == buffer_.size()) {
      buffer_.clear();
      consumed_ = 0;
    }
  }
}

}  // namespace nvdra::k8s
