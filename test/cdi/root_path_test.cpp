#include "cdi/root_path.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

namespace nvdra::cdi {
namespace {

namespace fs = std::filesystem;

// A root laid out as a merged-/usr host: /lib -> usr/lib (relative), /lib64 -> /usr/lib (absolute,
// which must stay inside the root), a library chain, a loop and a link above the root.
class RootPathTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "nvdra-root-path-XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    root_ = tmpl;
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
  void TearDown() override { fs::remove_all(root_); }

  // What the kernel makes of a path without absolute links: the answer for the same path in the root.
  std::string kernel(const std::string& inner) {
    char out[PATH_MAX];
    if (::realpath((root_.string() + inner).c_str(), out) == nullptr) return "missing";
    return std::string(out).substr(root_.string().size());
  }

  fs::path root_;
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

}  // namespace
}  // namespace nvdra::cdi
