#pragma once
// In agent/base so the leaf folders (k8s) share it with the runtime.
// Capped exponential backoff with full jitter, as client-go's wait.Backoff does it: the delay
// doubles per attempt up to `cap`, and a random fraction of it is used so that restarting peers
// do not retry in lock-step.
#include <algorithm>
#include <chrono>
#include <random>

namespace nvdra {

class Backoff {
 public:
  Backoff(std::chrono::milliseconds base, std::chrono::milliseconds cap) : base_(base), cap_(cap) {}

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
  std::minstd_rand rng_{std::random_device{}()};
};

}  // namespace nvdra
