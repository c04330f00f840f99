// The target registry shared by both drivers.
#include <vector>

#include "test/fuzz/fuzz_target.hpp"

namespace nvdra::fuzz {
namespace {
std::vector<Target>& registry() {
  static std::vector<Target> all;  // function-local: registrations run during static init
  return all;
}
}  // namespace

Registration::Registration(const char* name, TargetFn fn) { registry().push_back({name, fn}); }
std::span<const Target> targets() { return registry(); }

}  // namespace nvdra::fuzz
