// The mock's state file: a change written through one StateFile (another process, in the tests
// below another instance on the same file) is seen by the next read of every other; reads between
// changes answer from memory.
#include "nvml/mock/mock_state.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

namespace nvdra::nvml::mock {
namespace {

constexpr const char* kProfile =
    "driverVersion: \"570.148.08\"\ncudaDriverVersion: 12080\ngpus:\n"
    "  - {product: NVIDIA L4, uuid: GPU-00000000-0000-4000-8000-000000000001, pciBusId: \"00000000:07:00.0\"}\n";

class MockStateFile : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/nvdra-mock-state-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/l4.state";
    auto parsed = parse_profile(kProfile, "l4.yaml");
    ASSERT_TRUE(parsed.ok()) << parsed.error().message;
    profile_ = std::move(*parsed);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  static bool persistence(StateFile& f) {
    bool on = false;
    f.with(StateFile::Access::kRead, [&](MachineState& m) {
      on = m.gpus.at(0).persistence;
      return 0;
    });
    return on;
  }
  static void set_persistence(StateFile& f, bool on) {
    ASSERT_EQ(f.with(StateFile::Access::kWrite, [&](MachineState& m) {
      m.gpus.at(0).persistence = on;
      return 0;
    }), 0);
  }

  std::string dir_, path_;
  MachineProfile profile_;
};

TEST_F(MockStateFile, AChangeWrittenElsewhereIsSeenAtTheNextRead) {
  StateFile reader(path_, profile_), writer(path_, profile_);
  EXPECT_FALSE(persistence(reader));
  set_persistence(writer, true);
  EXPECT_TRUE(persistence(reader));
  set_persistence(writer, false);
  EXPECT_FALSE(persistence(reader));
  set_persistence(reader, true);
  EXPECT_TRUE(persistence(writer));
}

TEST_F(MockStateFile, ReadsBetweenChangesAnswerFromMemory) {
  StateFile reader(path_, profile_), writer(path_, profile_);
  set_persistence(writer, true);
  EXPECT_TRUE(persistence(reader));
  // Replaced behind the mock's back (no writer does this): unseen until the counter moves.
  std::ofstream(path_) << "not: [a state\n";
  EXPECT_TRUE(persistence(reader));
  set_persistence(writer, false);
  EXPECT_FALSE(persistence(reader));
}

TEST_F(MockStateFile, WithoutACounterEveryReadReadsTheFile) {
  std::filesystem::create_directory(path_ + ".gen");  // cannot be opened for writing: no counter
  StateFile reader(path_, profile_), writer(path_, profile_);
  set_persistence(writer, true);
  EXPECT_TRUE(persistence(reader));
  std::ofstream(path_) << "not: [a state\n";
  EXPECT_FALSE(persistence(reader)) << "a corrupt file reads as the initial state";
  set_persistence(writer, true);
  EXPECT_TRUE(persistence(reader));
}

}  // namespace
}  // namespace nvdra::nvml::mock
