#include "cdi/root_path.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "test/cdi/fake_driver_root.hpp"

namespace nvdra::cdi {
namespace {

namespace fs = std::filesystem;

// A root laid out as a merged-/usr host: /lib -> usr/lib (relative), /lib64 -> /usr/lib (absolute,
// which must stay inside the root), a library chain, a loop and a link above the root.
class RootPathTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(root_ / "usr/lib/x86_64-linux-gnu/nvidia");
    std::ofstream(root_ / "usr/lib/x86_64-linux-gnu/libcuda.so.580.95.05") << "lib";
    fs::create_symlink("libcuda.so.580.95.05", root_ / "usr/lib/x86_64-linux-gnu/libcuda.so.1");
    fs::create_symlink("libcuda.so.1", root_ / "usr/lib/x86_64-linux-gnu/libcuda.so");
    fs::create_symlink("../libcuda.so.1", root_ / "usr/lib/x86_64-linux-gnu/nvidia/libcuda.so.1");
    fs::create_symlink("usr/lib", root_ / "lib");
    fs::create_symlink("/usr/lib", root_ / "lib64");
    fs::create_symlink("loop-b", root_ / "usr/lib/loop-a");
    fs::create_symlink("loop-a", root_ / "usr/lib/loop-b");
    fs::create_symlink("../../../..", root_ / "usr/lib/above");
  }
  // What the kernel makes of a path without absolute links: the answer for the same path in the root.
  std::string kernel(const std::string& inner) {
    char out[PATH_MAX];
    if (::realpath((root_.string() + inner).c_str(), out) == nullptr) return "missing";
    return std::string(out).substr(root_.string().size());
  }

  testing::TempDir dir_;
  fs::path root_ = dir_.path();
};

TEST_F(RootPathTest, ResolvesAsTheKernelDoesForRelativeLinks) {
  RootResolver r(root_.string());
  for (const std::string p : {"/lib/x86_64-linux-gnu/libcuda.so", "/usr/lib/x86_64-linux-gnu/libcuda.so.1",
                              "/lib/x86_64-linux-gnu/nvidia/libcuda.so.1", "/lib/x86_64-linux-gnu/nvidia/../libcuda.so",
                              "/usr/lib/./x86_64-linux-gnu//libcuda.so.580.95.05", "/lib/x86_64-linux-gnu"}) {
    EXPECT_EQ(r.resolve(p).value_or("missing"), kernel(p)) << p;
    EXPECT_EQ(resolve_in_root(root_.string(), p).value_or("missing"), kernel(p)) << p;
  }
  EXPECT_EQ(r.resolve("/lib/x86_64-linux-gnu/libcuda.so"), "/usr/lib/x86_64-linux-gnu/libcuda.so.580.95.05");
}

TEST_F(RootPathTest, AnAbsoluteLinkStaysInsideTheRoot) {
  RootResolver r(root_.string());
  EXPECT_EQ(r.resolve("/lib64/x86_64-linux-gnu/libcuda.so.1"), "/usr/lib/x86_64-linux-gnu/libcuda.so.580.95.05");
  EXPECT_EQ(r.resolve("/lib64"), "/usr/lib");
}

TEST_F(RootPathTest, MissingLoopingAndEscapingPathsAreNotFound) {
  RootResolver r(root_.string());
  EXPECT_FALSE(r.resolve("/usr/lib/libnothing.so.1"));
  EXPECT_FALSE(r.resolve("/usr/lib/x86_64-linux-gnu/libcuda.so.1/inside-a-file"));
  EXPECT_FALSE(r.resolve("/usr/lib/loop-a"));
  EXPECT_FALSE(r.resolve("/usr/lib/loop-b/x"));
  EXPECT_FALSE(r.resolve("/usr/lib/above"));
  EXPECT_FALSE(r.resolve("/.."));
  EXPECT_FALSE(r.resolve("/usr/lib/x86_64-linux-gnu/libcuda.so.1/..")) << "a file has no parent to climb to, as ENOTDIR";
  EXPECT_FALSE(r.resolve("/lib/x86_64-linux-gnu/libcuda.so/."));
  // A failed resolve leaves nothing behind that spoils the next one through the same directories.
  EXPECT_EQ(r.resolve("/lib/x86_64-linux-gnu/libcuda.so"), "/usr/lib/x86_64-linux-gnu/libcuda.so.580.95.05");
  EXPECT_FALSE(r.resolve("/usr/lib/loop-a"));
}

TEST_F(RootPathTest, LinkTextIsTheLastComponentsOwn) {
  RootResolver r(root_.string());
  EXPECT_EQ(r.link_text("/lib/x86_64-linux-gnu/libcuda.so.1"), "libcuda.so.580.95.05");
  EXPECT_EQ(r.link_text("/usr/lib/x86_64-linux-gnu/libcuda.so"), "libcuda.so.1");
  EXPECT_FALSE(r.link_text("/usr/lib/x86_64-linux-gnu/libcuda.so.580.95.05")) << "a file, not a link";
  EXPECT_FALSE(r.link_text("/usr/lib/x86_64-linux-gnu/missing.so.1"));
  EXPECT_EQ(r.link_text("/lib64"), "/usr/lib");
}

// One resolver is one look at the root: a directory it has resolved is not looked at again, so a
// driver root's walk lstats each directory once. A new resolver sees the change.
TEST_F(RootPathTest, AResolverRemembersWhatItLookedAt) {
  RootResolver walk(root_.string());
  ASSERT_EQ(walk.resolve("/lib/x86_64-linux-gnu/libcuda.so.1"), "/usr/lib/x86_64-linux-gnu/libcuda.so.580.95.05");
  fs::remove(root_ / "lib");
  fs::create_directories(root_ / "lib/x86_64-linux-gnu");
  std::ofstream(root_ / "lib/x86_64-linux-gnu/libcuda.so.1") << "another";
  EXPECT_EQ(walk.resolve("/lib/x86_64-linux-gnu/libcuda.so.1"), "/usr/lib/x86_64-linux-gnu/libcuda.so.580.95.05");
  EXPECT_EQ(RootResolver(root_.string()).resolve("/lib/x86_64-linux-gnu/libcuda.so.1"),
            "/lib/x86_64-linux-gnu/libcuda.so.1");
  EXPECT_EQ(resolve_in_root(root_.string(), "/lib/x86_64-linux-gnu/libcuda.so.1"), "/lib/x86_64-linux-gnu/libcuda.so.1");
}

// Random trees of directories, files and relative links (with "..", ".", loops and climbs above the
// root), every path asked in a random order: one resolver for them all answers as the kernel's
// realpath does wherever that stays inside the root, and as a fresh resolve of each path alone.
TEST(RootPathRandom, OneResolverAnswersAsTheKernelAndAsEachPathAlone) {
  std::mt19937 rng(20261129);
  const std::vector<std::string> names{"a", "b", "c", "d"};  // never the root's own name: no way back in
  auto pick = [&](std::size_t n) { return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng); };
  for (int tree = 0; tree < 150; ++tree) {
    testing::TempDir base;
    const fs::path root = fs::path(base.path()) / "root";
    fs::create_directory(root);
    std::vector<std::string> dirs{""};  // inside the root, "" is the root itself
    std::vector<std::string> entries;
    for (int i = 0; i < 14; ++i) {
      const std::string at = dirs[pick(dirs.size())] + "/" + names[pick(names.size())];
      if (fs::exists(fs::symlink_status(root.string() + at))) continue;
      switch (pick(3)) {
        case 0: fs::create_directory(root.string() + at); dirs.push_back(at); break;
        case 1: std::ofstream(root.string() + at) << "f"; break;
        default: {
          std::string target;
          for (std::size_t k = 0, n = 1 + pick(3); k < n; ++k) {
            const auto r = pick(6);
            target += (target.empty() ? "" : "/") + std::string(r == 0 ? ".." : r == 1 ? "." : names[pick(names.size())]);
          }
          fs::create_symlink(target, root.string() + at);
        }
      }
      entries.push_back(at);
    }
    std::vector<std::string> paths;
    for (int i = 0; i < 40; ++i) {
      std::string p = entries.empty() ? "" : entries[pick(entries.size())];
      for (std::size_t k = 0, n = pick(3); k < n; ++k) {
        const auto r = pick(5);
        p += "/" + std::string(r == 0 ? ".." : names[pick(names.size())]);
      }
      paths.push_back(p.empty() ? "/" : p);
    }
    RootResolver shared(root.string());
    for (const auto& p : paths) {
      char real[PATH_MAX];
      std::optional<std::string> kernel;
      if (::realpath((root.string() + p).c_str(), real) != nullptr) {
        const std::string r(real);
        if (r == root.string()) kernel = "/";
        else if (r.rfind(root.string() + "/", 0) == 0) kernel = r.substr(root.string().size());
      }
      const auto alone = resolve_in_root(root.string(), p);
      EXPECT_EQ(shared.resolve(p), alone) << "tree " << tree << " path " << p;
      EXPECT_EQ(alone, kernel) << "tree " << tree << " path " << p;
    }
  }
}

}  // namespace
}  // namespace nvdra::cdi
