#pragma once
// In agent/base so the leaf folders (k8s) share it with the runtime.
// Capped exponential backoff with equal jitter: the ceiling doubles per attempt up to `cap`, and each
// delay is drawn uniformly from [ceiling/2, ceiling]. Half is fixed so that the delay keeps growing
// (full jitter, [0, ceiling], can retry at once however long the outage), half random so that peers
// cut off together (an API server restart) do not retry in lock-step. client-go's wait.Backoff
// jitters upwards instead ([d, d·(1+jitter)]); the spread is the same idea.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <random>

#include "agent/base/random_seed.hpp"

namespace nvdra {

class Backoff {
 public:
  Backoff(std::chrono::milliseconds base, std::chrono::milliseconds cap) : base_(base), cap_(cap) {}
  // A fixed seed: the same delays every run (tests simulate a fleet's retries deterministically).
  Backoff(std::chrono::milliseconds base, std::chrono::milliseconds cap, uint32_t seed)
      : base_(base), cap_(cap), rng_(seed) {}

  std::chrono::milliseconds next() {
    const auto exp = base_ * (1LL << std::min(attempt_, 20));
    ++attempt_;
    const auto ceiling = std::min<std::chrono::milliseconds>(exp, cap_);
    std::uniform_int_distribution<long long> dist(ceiling.count() / 2, ceiling.count());
    return std::chrono::milliseconds(dist(rng_));
  }
  void reset() { attempt_ = 0; }
  int attempts() const { return attempt_; }

 private:
  std::chrono::milliseconds base_;
  std::chrono::milliseconds cap_;
  int attempt_ = 0;
  std::minstd_rand rng_{random_seed()};
};

}  // namespace nvdra
