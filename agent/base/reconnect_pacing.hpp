#pragma once
// In agent/base so the leaf folders (k8s) share it with the runtime.
// When to reconnect after a lost connection that the whole fleet lost at the same instant (an API
// server restart cuts every agent's watches at once; issue #33 item 3). The goal: in no second does
// more than a tenth of the fleet reconnect. A fleet's reconnects after the server returns follow the
// density of its retry attempts at that moment, about 1 / (mean pause) per second, so:
//  * lost():   the first pause is drawn uniformly from [0, spread): agents cut together spread over
//              the whole window (density 1/spread per second), whatever the outage's length;
//  * failed(): an attempt while reconnecting failed (the server is still down): the pause is half a
//              ceiling that starts at `spread` and doubles up to max(spread, cap), plus a draw from
//              [0, spread). Every draw is at least `spread` wide, so each round of retries adds at
//              most (its share of the fleet) / spread per second, and all rounds together at most
//              1/spread; a failure backoff starting at 200 ms would instead gather the agents that
//              tried early into a crowd that returns with the server;
//  * connected(): a healthy stream again; the next loss starts over.
// One per agent, shared by every reflector of every API client of the agent: lost() and failed()
// answer a moment, not a pause, and the reflectors that lose their watches together (a restart cuts
// them all) get the same moment. An agent's four watches drawing on their own would bring its first
// request back at the earliest of four draws: 4/spread of the fleet per second at the start of the
// window instead of 1/spread.
// With spread = 20 s a returning server sees about 1/20 of the fleet per second (the unit test
// simulates 5,000 agents and outages of 0 s to 10 min); the agent's default is 30 s, which keeps
// the busiest second of a measured 200-node fleet at 6 % (20 s: 11.5 %, sampling noise and the
// server's own queue on top of the 1/20). The price: a single dropped watch returns within 30 s.
// Spread 0 turns the pacing off (enabled() false): the caller keeps its own backoff.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <random>

namespace nvdra {

class ReconnectPacing {
 public:
  using Clock = std::chrono::steady_clock;

  ReconnectPacing(std::chrono::milliseconds spread, std::chrono::milliseconds cap, uint32_t seed)
      : spread_(spread), cap_(std::max(spread, cap)), rng_(seed) {}

  bool enabled() const { return spread_.count() > 0; }
  bool reconnecting() const { return reconnecting_; }

  // A watch was lost at `now`: when to try again (the moment already drawn when another reflector
  // lost its watch in the same episode and that moment is still ahead).
  Clock::time_point lost(Clock::time_point now) {
    if (reconnecting_ && next_ > now) return next_;
    reconnecting_ = true;
    failures_ = 0;
    next_ = now + draw();
    return next_;
  }
  // An attempt made while reconnecting failed at `now`: the next moment (shared as lost()'s is).
  Clock::time_point failed(Clock::time_point now) {
    if (next_ > now) return next_;
    const auto ceiling = std::min<std::chrono::milliseconds>(spread_ * (1LL << std::min(failures_, 20)), cap_);
    ++failures_;
    next_ = now + ceiling / 2 + draw();
    return next_;
  }
  void connected() {
    reconnecting_ = false;
    failures_ = 0;
  }

 private:
  std::chrono::milliseconds draw() {
    if (!enabled()) return {};
    std::uniform_int_distribution<long long> dist(0, spread_.count() - 1);
    return std::chrono::milliseconds(dist(rng_));
  }

  std::chrono::milliseconds spread_;
  std::chrono::milliseconds cap_;
  int failures_ = 0;
  bool reconnecting_ = false;
  Clock::time_point next_{};
  std::minstd_rand rng_;
};

}  // namespace nvdra
