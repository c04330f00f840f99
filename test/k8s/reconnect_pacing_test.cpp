// ReconnectPacing (issue #33 item 3): how a fleet cut off together by an API server restart comes
// back. Deterministic: every simulated agent draws from its own fixed seed, and the test plays the
// fleet's attempts on a simulated clock (no timers), as the reflector makes them: lost() after the
// drop, failed() after each attempt made while the server is still down.
#include "agent/base/reconnect_pacing.hpp"

#include <gtest/gtest.h>

#include "agent/base/backoff.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <random>
#include <cstdio>
#include <set>

namespace nvdra {
namespace {

using std::chrono::milliseconds;

struct Pauses {
  std::function<milliseconds()> first;  // after the drop
  std::function<milliseconds()> again;  // after an attempt that found the server down
};

// The largest share of `agents` that reconnects in any one second after a server down for `outage`.
template <class MakePolicy>
double peak_share_per_second(int agents, milliseconds outage, MakePolicy make) {
  std::mt19937 seeds(33);
  std::map<long long, int> per_second;
  for (int a = 0; a < agents; ++a) {
    auto state = make(static_cast<uint32_t>(seeds()));
    Pauses p = state->pauses();
    auto t = p.first();
    while (t < outage) t += p.again();
    ++per_second[(t - outage).count() / 1000];
  }
  int peak = 0;
  for (const auto& [second, n] : per_second) peak = std::max(peak, n);
  return static_cast<double>(peak) / agents;
}

using Clock = ReconnectPacing::Clock;

milliseconds ms(Clock::duration d) { return std::chrono::duration_cast<milliseconds>(d); }

struct Paced {  // one agent: its clock advances by the pauses it is given
  ReconnectPacing pacing;
  Clock::time_point now{};
  milliseconds step(Clock::time_point next) {
    const auto d = ms(next - now);
    now = next;
    return d;
  }
  Pauses pauses() {
    return {[this] { return step(pacing.lost(now)); }, [this] { return step(pacing.failed(now)); }};
  }
};

struct BackedOff {  // the reflector before #33: [base/2, base] after the drop, then the backoff growing
  Backoff backoff;
  Pauses pauses() { return {[this] { return backoff.next(); }, [this] { return backoff.next(); }}; }
};

auto paced(milliseconds spread) {
  return [spread](uint32_t seed) {
    return std::make_unique<Paced>(Paced{ReconnectPacing(spread, milliseconds(30000), seed)});
  };
}

TEST(ReconnectPacing, NoSecondSeesMoreThanATenthOfAFleetOf5000WhateverTheOutage) {
  for (const int spread : {20000, 30000}) {  // 30 s: the agent's default
    for (const auto outage : {0, 1000, 5000, 12000, 30000, 120000, 600000}) {
      const double share = peak_share_per_second(5000, milliseconds(outage), paced(milliseconds(spread)));
      EXPECT_LE(share, 0.1) << "spread " << spread << " ms, server down " << outage << " ms";
      std::printf("spread %d ms, server down %d ms: at most %.4f of 5000 agents in one second\n", spread, outage,
                  share);
      EXPECT_GT(share, 0.0);
    }
  }
}

TEST(ReconnectPacing, TheBackoffAloneBringsTheFleetBackTogether) {
  // What the pacing is for: with the failure backoff alone (base 500 ms, the slice publisher's) a
  // 5 s restart brings a quarter or more of the fleet back within one second.
  auto backed_off = [](uint32_t seed) {
    return std::make_unique<BackedOff>(BackedOff{Backoff(milliseconds(500), milliseconds(30000), seed)});
  };
  EXPECT_GT(peak_share_per_second(5000, milliseconds(5000), backed_off), 0.25);
  EXPECT_GT(peak_share_per_second(5000, milliseconds(0), backed_off), 0.9);
}

TEST(ReconnectPacing, FirstPauseCoversTheWholeWindowAndFailuresDrawFromAWindowAsWide) {
  ReconnectPacing p(milliseconds(20000), milliseconds(30000), 7);
  std::set<long long> firsts;
  long long lo = 20000, hi = 0;
  Clock::time_point now{};
  for (int i = 0; i < 4000; ++i) {
    now += std::chrono::hours(1);
    p.connected();
    const auto t0 = p.lost(now);
    const long long d = ms(t0 - now).count();
    EXPECT_TRUE(p.reconnecting());
    firsts.insert(d / 1000);
    lo = std::min(lo, d), hi = std::max(hi, d);
    EXPECT_LT(d, 20000);
    const auto t1 = p.failed(t0), t2 = p.failed(t1), t3 = p.failed(t2);
    const long long f1 = ms(t1 - t0).count(), f2 = ms(t2 - t1).count(), f3 = ms(t3 - t2).count();
    EXPECT_GE(f1, 10000);  // half the ceiling (20 s) + [0, 20 s)
    EXPECT_LT(f1, 30000);
    EXPECT_GE(f2, 15000);  // ceiling 40 s, capped at 30 s
    EXPECT_LT(f2, 35000);
    EXPECT_GE(f3, 15000);
    EXPECT_LT(f3, 35000);
  }
  EXPECT_EQ(firsts.size(), 20u) << "every second of the window is drawn";
  EXPECT_LT(lo, 200);
  EXPECT_GT(hi, 19800);
  p.connected();
  EXPECT_FALSE(p.reconnecting());
}

TEST(ReconnectPacing, TheAgentsWatchesLostTogetherComeBackTogether) {
  // Shared by the agent's reflectors: the four watches a restart cuts get one moment, and the
  // attempts that fail at that moment one next moment; a later episode draws anew.
  ReconnectPacing p(milliseconds(20000), milliseconds(30000), 11);
  Clock::time_point cut{};
  const auto back = p.lost(cut);
  EXPECT_EQ(p.lost(cut + milliseconds(1)), back);
  EXPECT_EQ(p.lost(cut + milliseconds(2)), back);
  const auto again = p.failed(back);
  EXPECT_GT(again, back);
  EXPECT_EQ(p.failed(back + milliseconds(3)), again);
  p.connected();
  std::set<long long> later;
  for (int i = 1; i <= 20; ++i) {
    const auto t = again + std::chrono::hours(i);
    later.insert(ms(p.lost(t) - t).count());
    p.connected();
  }
  EXPECT_GT(later.size(), 15u) << "each episode draws its own moment";
}

TEST(ReconnectPacing, SameSeedSameDrawsOtherSeedOtherDraws) {
  ReconnectPacing a(milliseconds(20000), milliseconds(30000), 1), b(milliseconds(20000), milliseconds(30000), 1),
      c(milliseconds(20000), milliseconds(30000), 2);
  std::vector<Clock::time_point> da, db, dc;
  Clock::time_point now{};
  for (int i = 0; i < 10; ++i) {
    now += std::chrono::hours(1);
    for (auto* p : {&a, &b, &c}) p->connected();
    da.push_back(a.lost(now)), db.push_back(b.lost(now)), dc.push_back(c.lost(now));
    da.push_back(a.failed(da.back())), db.push_back(b.failed(db.back())), dc.push_back(c.failed(dc.back()));
  }
  EXPECT_EQ(da, db);
  EXPECT_NE(da, dc);
}

TEST(ReconnectPacing, SpreadZeroIsOff) {
  ReconnectPacing p(milliseconds(0), milliseconds(30000), 3);
  EXPECT_FALSE(p.enabled());
  Clock::time_point now{};
  EXPECT_EQ(p.lost(now), now);
}

}  // namespace
}  // namespace nvdra
