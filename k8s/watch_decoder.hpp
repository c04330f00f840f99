#pragma once
// WatchDecoder: turns the body bytes of a watch response (newline-framed JSON events, arriving in
// arbitrary pieces) into WatchEvents as the bytes arrive. An event may span several pieces and one
// piece may hold several events. simdjson parses each complete line in place (no copy of the
// object until it is handed out). Memory is bounded by max_event_bytes: a longer line is skipped to
// its end and reported as one EventTooLarge error; decoding carries on with the next line.
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "k8s/api_error.hpp"
#include "k8s/api_server.hpp"

namespace nvdra::k8s {

using DecodedFrame = std::variant<WatchEvent, ApiError>;

class WatchDecoder {
 public:
  explicit WatchDecoder(std::size_t max_event_bytes);
  ~WatchDecoder();
  WatchDecoder(const WatchDecoder&) = delete;
  WatchDecoder& operator=(const WatchDecoder&) = delete;

  // Appends the frames completed by `bytes` to `out`.
  void feed(std::string_view bytes, std::vector<DecodedFrame>& out);
  // Bytes of an unfinished event held back (for tests and the end-of-stream check).
  std::size_t pending_bytes() const { return buffer_.size() - consumed_; }

  // Decodes one complete line (no newline). Exposed for the fuzzer and tests.
  DecodedFrame decode_line(std::string_view line);

 private:
  struct Parser;
  std::size_t max_event_bytes_;
  std::string buffer_;
  std::size_t consumed_ = 0;     // prefix of buffer_ already decoded
  bool skipping_ = false;        // inside an oversized line: drop bytes until the next newline
  std::size_t skipped_bytes_ = 0;
  std::unique_ptr<Parser> parser_;
};

}  // namespace nvdra::k8s
