// CheckpointEncoder and ChecksumSpan: the incremental encoding writes encode_checkpoint()'s bytes
// for every checkpoint, whatever was changed, erased or failed in between.
#include <gtest/gtest.h>

#include <boost/json/parse.hpp>

#include <cstdio>
#include <functional>
#include <random>

#include "agent/claims/checkpoint/checkpoint_encoder.hpp"
#include "agent/claims/checkpoint/checkpoint_memory_store.hpp"

namespace nvdra::claims {
namespace {

namespace json = boost::json;

CheckpointedClaim claim(int i, ClaimState state) {
  CheckpointedClaim c;
  c.state = state;
  // Characters Go escapes (<, >, &, U+2028) and one Boost.JSON escapes (a control character).
  c.status = json::parse(R"({"allocation":{"devices":{"results":[{"request":"gpu<&>","driver":"gpu.nvidia.com",)"
                         R"("pool":"node-a","device":"gpu-)" + std::to_string(i % 8) + R"("}]}}})");
  if (state != ClaimState::kPrepareStarted)
    c.prepared_devices = json::parse(R"([{"devices":[{"gpu":{"info":{"uuid":"GPU-)" + std::to_string(i) +
                                     "\xE2\x80\xA8\"}}}]}]")
                             .as_array();
  c.name = "claim-" + std::to_string(i) + (i % 5 == 0 ? "\x01" : "");
  c.ns = i % 2 ? "ns" : "";
  if (state == ClaimState::kPrepareAborted) c.aborted_at = "2026-11-26T08:00:00Z";
  return c;
}

std::string uid(int i) { return "uid-" + std::to_string(i * 7919 % 1000); }

TEST(ChecksumSpan, EqualsHashingTheBytesFromEveryState) {
  const std::string head = "{\"checksum\":0,";
  const std::string span_bytes = "\"a<b>\":{\"k\":[1,2,\"\xE2\x80\xA8\xff\"]}";
  const ChecksumSpan span(span_bytes);
  for (const std::string& prefix : {head, head + "x", head + "\x01\x02\xfe", std::string("{")}) {
    GoChecksum via_span, plain;
    via_span.feed(prefix);
    via_span.feed(span);
    via_span.feed("}");
    plain.feed(prefix);
    plain.feed(span_bytes);
    plain.feed("}");
    EXPECT_EQ(via_span.finish(), plain.finish()) << prefix;
    EXPECT_EQ(plain.finish(), go_checksum(prefix + span_bytes + "}"));
  }
  GoChecksum empty_span;
  empty_span.feed("{");
  empty_span.feed(ChecksumSpan(""));
  EXPECT_EQ(empty_span.finish(), go_checksum("{"));
}

// Kept pieces change nothing: every span built through SpanPieces hashes like the plain one, from
// every state, while the pieces recur (claims' entries: the same JSON around other values) and
// while they do not (random bytes, escaped quotes, a string left open).
TEST(ChecksumSpan, KeptPiecesGiveTheSameSpan) {
  std::mt19937 rng(20);
  SpanPieces pieces;
  const std::string values[] = {"gpu", "gpu.nvidia.com", "gpu-node-1", "GPU-5ca1e000-0000-4000-8000-000000000001",
                                "a\\\"b", "\xE2\x80\xA8", ""};
  auto entry = [&](int i) {
    const std::string uid = "uid-" + std::to_string(rng());
    const auto& v = values[i % 7];
    return "\"" + uid + "\":{\"status\":{\"allocation\":{\"devices\":{\"results\":[{\"request\":\"" + v +
           "\",\"driver\":\"gpu.nvidia.com\",\"pool\":\"gpu-node-1\",\"device\":\"gpu-" + std::to_string(i % 8) +
           "\"}]}}},\"mig\":null,\"n\":[1,2," + std::to_string(i) + "],\"cdi\":[\"k8s.gpu.nvidia.com/claim=" + uid + "\"]}";
  };
  for (int i = 0; i < 300; ++i) {
    std::string bytes = entry(i);
    if (i % 10 == 9) {  // not JSON at all, or cut short inside a string
      bytes.resize(rng() % bytes.size());
      for (int k = 0; k < 5 && !bytes.empty(); ++k) bytes[rng() % bytes.size()] ^= 0x22;  // quotes come and go
    }
    const ChecksumSpan plain(bytes), via_pieces(bytes, &pieces);
    for (const uint32_t h : {0u, 1u, 0xFFu, 0x12345678u, static_cast<uint32_t>(rng())})
      ASSERT_EQ(via_pieces.apply(h), plain.apply(h)) << "entry " << i << ": " << bytes;
  }
  EXPECT_GT(pieces.kept(), 5u) << "the recurring JSON between values was never kept";
  EXPECT_LE(pieces.kept(), SpanPieces::kMaxKept);
}

TEST(CheckpointEncoder, RandomChangesGiveTheFullEncodingsBytes) {
  std::mt19937 rng(33);
  Checkpoint cp;
  CheckpointEncoder encoder;
  const ClaimState states[] = {ClaimState::kPrepareStarted, ClaimState::kPrepareCompleted,
                               ClaimState::kPrepareAborted};
  for (int round = 0; round < 400; ++round) {
    std::vector<std::string> changed;
    for (int n = static_cast<int>(rng() % 4); n >= 0; --n) {
      const int i = static_cast<int>(rng() % 60);
      if (rng() % 4 == 0) cp.claims.erase(uid(i));
      else cp.claims[uid(i)] = claim(i + round, states[rng() % 3]);
      changed.push_back(uid(i));
    }
    if (round % 50 == 10) cp.node_boot_id = round % 100 == 10 ? "" : "boot-<" + std::to_string(round) + ">";
    ASSERT_EQ(encoder.encode(cp, &changed), encode_checkpoint(cp)) << "round " << round;
  }
  // Every claim has had its span computed by now: the bytes still match.
  std::vector<std::string> none;
  for (int i = 0; i < 20; ++i) ASSERT_EQ(encoder.encode(cp, &none), encode_checkpoint(cp));
}

TEST(CheckpointEncoder, UnknownOrWrongBaseEncodesEverythingAgain) {
  Checkpoint cp;
  for (int i = 0; i < 5; ++i) cp.claims[uid(i)] = claim(i, ClaimState::kPrepareCompleted);
  CheckpointEncoder encoder;
  EXPECT_EQ(encoder.encode(cp, nullptr), encode_checkpoint(cp));
  // A claim added behind the encoder's back with an empty `changed`: the count differs, so it
  // notices and starts over rather than writing a file without the claim.
  cp.claims[uid(9)] = claim(9, ClaimState::kPrepareStarted);
  std::vector<std::string> none;
  EXPECT_EQ(encoder.encode(cp, &none), encode_checkpoint(cp));
  cp.claims.clear();
  EXPECT_EQ(encoder.encode(cp, &none), encode_checkpoint(cp));
}

TEST(CheckpointEncoder, MemoryStoreFailedSaveIsNotTheBaseOfTheNext) {
  MemoryCheckpointStore store;
  Checkpoint cp;
  cp.node_boot_id = "boot";
  cp.claims[uid(1)] = claim(1, ClaimState::kPrepareCompleted);
  ASSERT_TRUE(store.save(cp));
  Checkpoint failed = cp;
  failed.claims[uid(1)] = claim(1, ClaimState::kPrepareAborted);
  store.fail_next_saves(1);
  ASSERT_FALSE(store.save_changed(failed, {uid(1)}));
  // The next save is relative to what succeeded: uid(3) only, uid(1)'s change never reached the
  // store (a cache kept from the failed save would write uid(1) aborted).
  cp.claims[uid(3)] = claim(3, ClaimState::kPrepareStarted);
  ASSERT_TRUE(store.save_changed(cp, {uid(3)}));
  EXPECT_EQ(store.bytes(), encode_checkpoint(cp));
}

// warm() computes the spans the saves left for later: claims that outlived a save, never one the
// last save wrote; the bytes stay encode_checkpoint()'s.
TEST(CheckpointEncoder, WarmTakesOnlyClaimsThatOutlivedASaveAndKeepsTheBytes) {
  Checkpoint cp;
  for (int i = 0; i < 10; ++i) cp.claims[uid(i)] = claim(i, ClaimState::kPrepareCompleted);  // 20 members
  CheckpointEncoder encoder;
  ASSERT_EQ(encoder.encode(cp, nullptr), encode_checkpoint(cp));  // a start: every claim was there before
  EXPECT_TRUE(encoder.warm(0)) << "the save computed kSpansPerSave spans, 12 are left";
  EXPECT_TRUE(encoder.warm(11));
  EXPECT_FALSE(encoder.warm(1)) << "the last one";
  EXPECT_FALSE(encoder.warm(100));

  std::vector<std::string> added;
  for (int i = 10; i < 15; ++i) cp.claims[uid(i)] = claim(i, ClaimState::kPrepareCompleted), added.push_back(uid(i));
  ASSERT_EQ(encoder.encode(cp, &added), encode_checkpoint(cp));
  EXPECT_FALSE(encoder.warm(100)) << "the claims the last save wrote may change again at once: not yet";

  std::vector<std::string> none;
  ASSERT_EQ(encoder.encode(cp, &none), encode_checkpoint(cp));  // they outlived it: 8 of their 10 spans
  EXPECT_TRUE(encoder.warm(1));
  EXPECT_FALSE(encoder.warm(1));
  cp.claims.erase(uid(3));
  std::vector<std::string> erased{uid(3)};
  EXPECT_EQ(encoder.encode(cp, &erased), encode_checkpoint(cp));
  EXPECT_EQ(encoder.encode(cp, &none), encode_checkpoint(cp));
}

// A save gives no span to a PrepareStarted claim (its next commit rewrites it); warm() does, in
// idle time, and the bytes stay encode_checkpoint()'s throughout.
TEST(CheckpointEncoder, SavesLeavePrepareStartedClaimsToWarm) {
  Checkpoint cp;
  for (int i = 0; i < 4; ++i) cp.claims[uid(i)] = claim(i, ClaimState::kPrepareStarted);  // 4 members
  CheckpointEncoder encoder;
  ASSERT_EQ(encoder.encode(cp, nullptr), encode_checkpoint(cp));  // a start: they were there before
  std::vector<std::string> none;
  ASSERT_EQ(encoder.encode(cp, &none), encode_checkpoint(cp));
  EXPECT_TRUE(encoder.warm(3)) << "two saves computed no span of the 4 PrepareStarted members";
  EXPECT_FALSE(encoder.warm(1));
  cp.claims[uid(0)] = claim(0, ClaimState::kPrepareCompleted);
  std::vector<std::string> completed{uid(0)};
  ASSERT_EQ(encoder.encode(cp, &completed), encode_checkpoint(cp));
  ASSERT_EQ(encoder.encode(cp, &none), encode_checkpoint(cp));  // uid(0) outlived a save: both spans
  EXPECT_FALSE(encoder.warm(0)) << "the save took the PrepareCompleted claim's v2 and v1 members";
  EXPECT_EQ(encoder.encode(cp, &none), encode_checkpoint(cp));
}

// Claims whose UIDs share their first characters are hashed as one span per group once each has a
// span (warm() between saves gets them there): with random UIDs (many small groups), with UIDs
// that share a prefix (one group, composed while it has at most kMaxGroup members, fed member by
// member beyond), through puts, erases and state changes, the bytes stay encode_checkpoint()'s.
TEST(CheckpointEncoder, GroupedSpansGiveTheFullEncodingsBytes) {
  const auto random_uid = [](int i) {
    char buf[40];
    const uint32_t h = static_cast<uint32_t>(i) * 2654435761u;
    std::snprintf(buf, sizeof buf, "%08x-%04x-4000-8000-%012d", h, h >> 16, i);
    return std::string(buf);
  };
  const auto shared_prefix = [](int i) { return "uid-" + std::to_string(i); };
  for (int pool : {300, 90}) {  // 90: "uid-" groups past kMaxGroup and back under it
    for (const auto& make_uid : {std::function<std::string(int)>(random_uid), std::function<std::string(int)>(shared_prefix)}) {
      std::mt19937 rng(static_cast<unsigned>(pool));
      Checkpoint cp;
      CheckpointEncoder encoder;
      for (int round = 0; round < 120; ++round) {
        std::vector<std::string> changed;
        for (int n = round < 3 ? 60 : static_cast<int>(rng() % 3); n >= 0; --n) {
          const int i = static_cast<int>(rng() % static_cast<unsigned>(pool));
          if (rng() % 5 == 0) cp.claims.erase(make_uid(i));
          else cp.claims[make_uid(i)] = claim(i + round, rng() % 4 ? ClaimState::kPrepareCompleted : ClaimState::kPrepareStarted);
          changed.push_back(make_uid(i));
        }
        ASSERT_EQ(encoder.encode(cp, &changed), encode_checkpoint(cp)) << "pool " << pool << " round " << round;
        encoder.warm(static_cast<int>(rng() % 40));
      }
      while (encoder.warm(100)) {
      }
      std::vector<std::string> none;
      for (int i = 0; i < 3; ++i) ASSERT_EQ(encoder.encode(cp, &none), encode_checkpoint(cp)) << "pool " << pool;
    }
  }
}

// Composing spans equals the span of the concatenated bytes, from every state.
TEST(ChecksumSpan, ComposedSpansEqualTheSpanOfTheirBytes) {
  const std::string a = R"("uid-1":{"a":1})", b = R"("uid-2":{"b":"\u003c"})";
  SpanComposer composer;
  composer.feed(ChecksumSpan(a));
  composer.feed(",");
  composer.feed(ChecksumSpan(b));
  const ChecksumSpan composed = composer.finish(), plain(a + "," + b);
  for (uint32_t h : {0u, 1u, 255u, 256u, 0x811c9dc5u, 0xdeadbeefu, 0xffffffffu}) EXPECT_EQ(composed.apply(h), plain.apply(h)) << h;
}

}  // namespace
}  // namespace nvdra::claims
