#pragma once
// A seed for the jitter generators (Backoff, the reflector's watch timeouts, lease retries, the
// fleet's reconnect spread). One getrandom(2) call: std::random_device{}() costs ~16 µs in a VM
// (libstdc++ probes the CPU with cpuid, which traps to the hypervisor, at every construction), and
// a start makes ~15 of them. Only the spread needs randomness, never secrecy; a getrandom that
// fails (a seccomp filter, a pre-3.17 kernel) falls back to the clock and the address of a local.
#include <sys/random.h>

#include <chrono>
#include <cstdint>

namespace nvdra {

inline uint32_t random_seed() {
  uint32_t seed = 0;
  if (::getrandom(&seed, sizeof seed, GRND_NONBLOCK) == static_cast<ssize_t>(sizeof seed)) return seed;
  const auto now = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  return static_cast<uint32_t>(now ^ (now >> 32) ^ reinterpret_cast<uintptr_t>(&seed));
}

}  // namespace nvdra
