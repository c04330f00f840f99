// libFuzzer target for the watch-frame decoder: arbitrary bytes cut into arbitrary pieces must
// never crash, and buffered memory must stay within the event limit.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "k8s/watch_decoder.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::size_t piece = 1 + data[0] % 64;  // first byte chooses how the stream is cut
  std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  nvdra::k8s::WatchDecoder decoder(1024);
  std::vector<nvdra::k8s::DecodedFrame> out;
  for (std::size_t i = 0; i < bytes.size(); i += piece) decoder.feed(bytes.substr(i, piece), out);
  if (decoder.pending_bytes() > 1024) std::abort();
  return 0;
}
