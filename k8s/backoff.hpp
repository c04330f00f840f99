#pragma once
// Capped exponential backoff with jitter for API retries (client-go's wait.Backoff shape). k8s/ is a
// leaf folder and cannot use agent/runtime's copy.
#include <algorithm>
#include <chrono>
#include <random>

namespace nvdra::k8s {

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

}  // namespace nvdra::k8s
