#pragma once
// What a test needs from the machine (root, mknod, a file of the OS). Outside CI a missing prerequisite
// skips the test with one line saying what was left out; in CI (CI=true) it fails the test, naming
// what is missing: a green CI run means every check ran. The Python side is test/lib/prerequisites.py.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

namespace nvdra::testing {

inline bool in_ci() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && std::strcmp(ci, "true") == 0;
}

}  // namespace nvdra::testing

// Use at the top of a TEST body: NVDRA_REQUIRE_PREREQUISITE(cond, "what is missing").
#define NVDRA_REQUIRE_PREREQUISITE(cond, what)                                                        \
  do {                                                                                               \
    if (!(cond)) {                                                                                   \
      if (::nvdra::testing::in_ci()) {                                                               \
        FAIL() << "missing prerequisite: " << what << " [CI=true: a missing prerequisite fails the test]"; \
      } else {                                                                                       \
        GTEST_SKIP() << "missing prerequisite: " << what;                                            \
      }                                                                                              \
    }                                                                                                \
  } while (0)
