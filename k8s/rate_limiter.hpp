#pragma once
// Client-side token bucket (client-go's flowcontrol.NewTokenBucketRateLimiter): `burst` requests may
// go at once, then `qps` per second. reserve() takes a token and says how long to wait before using
// it, so callers wait on their own timer and stay cancellable. qps <= 0 disables the limit.
#include <algorithm>
#include <chrono>

namespace nvdra::k8s {

class RateLimiter {
 public:
  using Clock = std::chrono::steady_clock;

  RateLimiter(double qps, int burst) : qps_(qps), burst_(std::max(burst, 1)), tokens_(burst_) {}

  Clock::duration reserve(Clock::time_point now) {
    if (qps_ <= 0) return Clock::duration::zero();
    if (!started_) {
      last_ = now;
      started_ = true;
    }
    const double elapsed = std::chrono::duration<double>(now - last_).count();
    tokens_ = std::min<double>(burst_, tokens_ + elapsed * qps_);
    last_ = now;
    tokens_ -= 1;
    if (tokens_ >= 0) return Clock::duration::zero();
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(-tokens_ / qps_));
  }

 private:
  double qps_;
  int burst_;
  double tokens_;
  bool started_ = false;
  Clock::time_point last_{};
};

}  // namespace nvdra::k8s
