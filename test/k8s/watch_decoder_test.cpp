#include "k8s/watch_decoder.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace nvdra::k8s {
namespace {

const std::string kAdded =
    R"({"type":"ADDED","object":{"kind":"ResourceSlice","metadata":{"name":"s1","resourceVersion":"7"},"spec":{}}})"
    "\n";
const std::string kBookmark = R"({"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"9"}}})" "\n";

std::vector<DecodedFrame> feed_in_pieces(WatchDecoder& d, const std::string& bytes, std::size_t piece) {
  std::vector<DecodedFrame> out;
  for (std::size_t i = 0; i < bytes.size(); i += piece) d.feed(std::string_view(bytes).substr(i, piece), out);
  return out;
}

TEST(WatchDecoder, EventSplitAcrossManyPiecesIsDecodedOnce) {
  WatchDecoder d(1 << 20);
  auto out = feed_in_pieces(d, kAdded, 3);
  ASSERT_EQ(out.size(), 1u);
  const auto& ev = std::get<WatchEvent>(out[0]);
  EXPECT_EQ(ev.type, WatchEventType::kAdded);
  EXPECT_EQ(ev.name, "s1");
  EXPECT_EQ(ev.resource_version, "7");
  EXPECT_EQ(ev.object.front(), '{');
  EXPECT_EQ(ev.object.back(), '}');
  EXPECT_EQ(d.pending_bytes(), 0u);
}

TEST(WatchDecoder, SeveralEventsInOnePieceAreAllDecodedInOrder) {
  WatchDecoder d(1 << 20);
  std::vector<DecodedFrame> out;
  d.feed(kAdded + kBookmark + kAdded, out);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(std::get<WatchEvent>(out[1]).type, WatchEventType::kBookmark);
  EXPECT_EQ(std::get<WatchEvent>(out[1]).resource_version, "9");
}

TEST(WatchDecoder, OversizedEventIsOneErrorAndDecodingContinues) {
  WatchDecoder d(256);
  std::string huge = R"({"type":"ADDED","object":{"metadata":{"name":")" + std::string(5000, 'x') + "\"}}}\n";
  auto out = feed_in_pieces(d, huge + kBookmark, 100);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(std::get<ApiError>(out[0]).reason, kReasonEventTooLarge);
  EXPECT_EQ(std::get<WatchEvent>(out[1]).type, WatchEventType::kBookmark);
  EXPECT_LE(d.pending_bytes(), 256u);
}

TEST(WatchDecoder, MalformedLinesAreErrorsNotCrashes) {
  WatchDecoder d(1 << 20);
  std::vector<DecodedFrame> out;
  d.feed("not json\n{\"type\":\"EXPLODED\",\"object\":{}}\n{\"type\":\"ADDED\"}\n[1,2]\n", out);
  ASSERT_EQ(out.size(), 4u);
  for (const auto& f : out) EXPECT_EQ(std::get<ApiError>(f).reason, kReasonBadResponse);
  EXPECT_NE(std::get<ApiError>(out[1]).message.find("ADDED, MODIFIED, DELETED, BOOKMARK, ERROR"), std::string::npos);
}

TEST(WatchDecoder, ErrorEventCarriesTheStatus) {
  WatchDecoder d(1 << 20);
  std::vector<DecodedFrame> out;
  d.feed(R"({"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired","message":"too old"}})" "\n", out);
  ASSERT_EQ(out.size(), 1u);
  const auto err = decode_status(0, std::get<WatchEvent>(out[0]).object);
  EXPECT_TRUE(err.gone());
  EXPECT_EQ(err.http_status, 410);
}

}  // namespace
}  // namespace nvdra::k8s
