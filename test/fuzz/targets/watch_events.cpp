// Watch stream bytes (k8s/watch_decoder) cut into pieces chosen by the first byte. Invariants: the
// frames do not depend on how the stream is cut, buffered bytes stay within the limit, and every
// event's metadata is what read_object_meta reads from its object. Accepted: every line decoded
// into an event and nothing left pending.
#include <string_view>
#include <vector>

#include "k8s/api_error.hpp"
#include "k8s/object_meta.hpp"
#include "k8s/watch_decoder.hpp"
#include "test/fuzz/fuzz_target.hpp"

namespace {
using nvdra::k8s::DecodedFrame;
using nvdra::k8s::WatchEvent;
constexpr std::size_t kLimit = 1024;

bool same(const DecodedFrame& a, const DecodedFrame& b) {
  if (a.index() != b.index()) return false;
  if (const auto* ea = std::get_if<WatchEvent>(&a)) {
    const auto& eb = std::get<WatchEvent>(b);
    return ea->type == eb.type && ea->object == eb.object && ea->name == eb.name && ea->ns == eb.ns &&
           ea->resource_version == eb.resource_version;
  }
  const auto& xa = std::get<nvdra::k8s::ApiError>(a);
  const auto& xb = std::get<nvdra::k8s::ApiError>(b);
  return xa.reason == xb.reason && xa.message == xb.message;
}
}  // namespace

NVDRA_FUZZ_TARGET(watch_events) {
  if (data.empty()) return nvdra::fuzz::Verdict::kRejected;
  const std::size_t piece = 1 + data[0] % 64;
  const std::string_view bytes(reinterpret_cast<const char*>(data.data()) + 1, data.size() - 1);
  nvdra::k8s::WatchDecoder cut(kLimit), whole(kLimit);
  std::vector<DecodedFrame> frames, reference;
  for (std::size_t i = 0; i < bytes.size(); i += piece) {
    cut.feed(bytes.substr(i, piece), frames);
    NVDRA_FUZZ_CHECK(cut.pending_bytes() <= kLimit);
  }
  whole.feed(bytes, reference);
  NVDRA_FUZZ_CHECK(frames.size() == reference.size());
  for (std::size_t i = 0; i < frames.size() && i < reference.size(); ++i) NVDRA_FUZZ_CHECK(same(frames[i], reference[i]));
  NVDRA_FUZZ_CHECK(cut.pending_bytes() == whole.pending_bytes());
  bool all_events = true;
  for (const auto& frame : frames) {
    const auto* event = std::get_if<WatchEvent>(&frame);
    if (event == nullptr) {
      all_events = false;
      continue;
    }
    if (event->type == nvdra::k8s::WatchEventType::kError) {
      (void)nvdra::k8s::decode_status(0, event->object);
      continue;
    }
    auto meta = nvdra::k8s::read_object_meta(event->object);
    if (meta.ok()) {
      NVDRA_FUZZ_CHECK(meta->name == event->name);
      NVDRA_FUZZ_CHECK(meta->ns == event->ns);
      NVDRA_FUZZ_CHECK(meta->resource_version == event->resource_version);
    }
  }
  return nvdra::fuzz::verdict(all_events && cut.pending_bytes() == 0);
}
