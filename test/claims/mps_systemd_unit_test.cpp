// SystemdMpsControl against a real dbus-daemon and the stand-in org.freedesktop.systemd1, which
// runs the transient unit's ExecStart: a stand-in nvidia-cuda-mps-control under a temporary driver
// root records its arguments, environment and the commands it gets on stdin. Also the rule
// --mps-manager=auto follows.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <boost/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "agent/claims/sharing/mps_manager.hpp"
#include "agent/claims/sharing/mps_systemd_unit.hpp"
#include "test/claims/temp_dir.hpp"
#include "test/imex/fake_systemd.hpp"
#include "test/systemd/private_bus.hpp"

namespace nvdra::claims {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class SystemdMps : public ::testing::Test {
 protected:
  void SetUp() override {
    ::setenv("DBUS_SYSTEM_BUS_ADDRESS", bus_.address().c_str(), 1);
    const std::string bin = dir_.path() + "/driver/usr/bin";
    fs::create_directories(bin);
    control_ = bin + "/nvidia-cuda-mps-control";
    // `-d` stands for the daemon: it fails when asked to; without flags it is the control client.
    std::ofstream(control_) << "#!/bin/sh\nlog='" << log_ << "'\n"
                            << "echo \"args=$* pipe=$CUDA_MPS_PIPE_DIRECTORY log=$CUDA_MPS_LOG_DIRECTORY "
                               "visible=$CUDA_VISIBLE_DEVICES\" >> \"$log\"\n"
                            << "if [ \"$1\" = -d ]; then\n  if [ -e '" << dir_.path()
                            << "/fail' ]; then echo 'cannot start daemon' >&2; exit 1; fi\n  exit 0\nfi\n"
                            << "cat >> \"$log\"\n";
    ::chmod(control_.c_str(), 0755);
    daemon_.id = "11111111-2222-3333-4444-555555555555-abcde";
    daemon_.root_dir = dir_.path() + "/mps/" + daemon_.id;
    daemon_.uuids = {"GPU-aaaa", "GPU-bbbb"};
    daemon_.plan.active_thread_percentage = 25;
    daemon_.plan.pinned_limits = {{"GPU-aaaa", "1024M"}};
  }
  void TearDown() override { ::unsetenv("DBUS_SYSTEM_BUS_ADDRESS"); }

  json::object transient() { return json::parse(systemd_.command("transient")).as_object(); }
  SystemdMpsControl control() { return SystemdMpsControl(dir_.path() + "/driver", std::chrono::seconds(10)); }

  nvdra::test::PrivateBus bus_;
  nvdra::test::FakeSystemd systemd_{bus_.address()};
  testing::TempDir dir_;
  std::string control_, log_ = dir_.path() + "/control.log";
  MpsDaemon daemon_;
};

TEST_F(SystemdMps, StartRunsATransientUnitWithTheDaemonsArgvAndEnvironmentThenSetsTheLimits) {
  auto mps = control();
  ASSERT_TRUE(mps.start(daemon_)) << "start failed";
  const std::string unit = "nvdra-mps-" + daemon_.id + ".service";
  EXPECT_EQ(SystemdMpsControl::unit_name(daemon_), unit);

  auto state = transient();
  ASSERT_TRUE(state["units"].as_object().contains(unit)) << json::serialize(state);
  const auto& u = state["units"].as_object().at(unit).as_object();
  EXPECT_EQ(u.at("active"), "active");
  EXPECT_EQ(u.at("path"), json::value(control_));
  EXPECT_EQ(u.at("argv"), (json::array{"nvidia-cuda-mps-control", "-d"}));
  EXPECT_EQ(u.at("env"), (json::array{"CUDA_MPS_PIPE_DIRECTORY=" + daemon_.pipe_dir(),
                                      "CUDA_MPS_LOG_DIRECTORY=" + daemon_.log_dir(),
                                      "CUDA_VISIBLE_DEVICES=GPU-aaaa,GPU-bbbb"}));
  const auto& props = u.at("properties").as_object();
  EXPECT_EQ(props.at("Type"), "forking");
  EXPECT_EQ(props.at("CollectMode"), "inactive-or-failed");
  EXPECT_NE(props.at("Description").as_string().find(daemon_.id), json::string::npos);

  for (const auto& d : {daemon_.pipe_dir(), daemon_.shm_dir(), daemon_.log_dir()}) EXPECT_TRUE(fs::is_directory(d)) << d;
  const std::string log = read_file(log_);
  EXPECT_NE(log.find("args=-d pipe=" + daemon_.pipe_dir()), std::string::npos) << log;
  EXPECT_NE(log.find("args= pipe=" + daemon_.pipe_dir()), std::string::npos) << "limits over the control pipe: " << log;
  EXPECT_NE(log.find("set_default_active_thread_percentage 25\n"), std::string::npos) << log;
  EXPECT_NE(log.find("set_default_device_pinned_mem_limit GPU-aaaa 1024M\n"), std::string::npos) << log;
}

TEST_F(SystemdMps, MultiUserAddsDashM) {
  daemon_.plan.multi_user = true;
  ASSERT_TRUE(control().start(daemon_));
  auto state = transient();
  EXPECT_EQ(state["units"].as_object().at(SystemdMpsControl::unit_name(daemon_)).at("argv"),
            (json::array{"nvidia-cuda-mps-control", "-d", "-M"}));
}

TEST_F(SystemdMps, ASecondStartFindsTheActiveUnitAndDoesNothing) {
  ASSERT_TRUE(control().start(daemon_));
  const std::string before = read_file(log_);
  // A fresh instance, as after an agent restart: the unit is found by name.
  ASSERT_TRUE(control().start(daemon_));
  EXPECT_EQ(transient()["starts"], 1);
  EXPECT_EQ(read_file(log_), before) << "neither the daemon nor the limits ran again";
}

TEST_F(SystemdMps, StopStopsTheUnitAndRemovesTheDirectories) {
  auto mps = control();
  ASSERT_TRUE(mps.start(daemon_));
  ASSERT_TRUE(mps.stop(daemon_));
  auto state = transient();
  EXPECT_TRUE(state["units"].as_object().empty()) << json::serialize(state);
  EXPECT_EQ(state["stopped"], (json::array{SystemdMpsControl::unit_name(daemon_)}));
  EXPECT_FALSE(fs::exists(daemon_.root_dir));
  // Stopped already: systemd does not know the unit any more, which is success.
  EXPECT_TRUE(mps.stop(daemon_));
}

TEST_F(SystemdMps, StopOfAnUnknownUnitSucceedsAndRemovesTheDirectories) {
  fs::create_directories(daemon_.pipe_dir());
  ASSERT_TRUE(control().stop(daemon_));
  EXPECT_FALSE(fs::exists(daemon_.root_dir));
  EXPECT_TRUE(transient()["stopped"].as_array().empty());
}

TEST_F(SystemdMps, AFailingDaemonIsAnErrorNamingTheUnitAndItLeavesNoUnit) {
  std::ofstream(dir_.path() + "/fail") << "";
  auto st = control().start(daemon_);
  ASSERT_FALSE(st);
  const std::string unit = SystemdMpsControl::unit_name(daemon_);
  EXPECT_NE(st.error().message.find("MPS unit " + unit + " did not start: job result \"failed\""), std::string::npos)
      << st.error().message;
  EXPECT_NE(st.error().message.find("journalctl -u " + unit), std::string::npos) << st.error().message;
  EXPECT_TRUE(transient()["units"].as_object().empty());
  EXPECT_EQ(read_file(log_).find("set_default"), std::string::npos) << "no limits for a daemon that did not start";
}

TEST_F(SystemdMps, AMissingControlProgramIsAnErrorBeforeAnyUnit) {
  fs::remove(control_);
  auto st = control().start(daemon_);
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message.find("nvidia-cuda-mps-control not found under driver root"), std::string::npos);
  EXPECT_EQ(transient()["starts"], 0);
}

TEST_F(SystemdMps, NoSystemdOnTheBusIsAnErrorNamingTheUnitAndTheDbusError) {
  systemd_.stop();
  auto st = control().start(daemon_);
  ASSERT_FALSE(st);
  const auto& m = st.error().message;
  EXPECT_NE(m.find("MPS unit " + SystemdMpsControl::unit_name(daemon_)), std::string::npos) << m;
  EXPECT_NE(m.find("org.freedesktop.DBus.Error."), std::string::npos) << m;
}

TEST(SystemdMpsBus, NoSystemBusIsAnErrorNamingTheUnit) {
  testing::TempDir dir;
  ::setenv("DBUS_SYSTEM_BUS_ADDRESS", ("unix:path=" + dir.path() + "/no-bus").c_str(), 1);
  MpsDaemon daemon{"uid-12345", dir.path() + "/mps/uid-12345", {"GPU-aaaa"}, {}};
  auto st = SystemdMpsControl("/", std::chrono::seconds(5)).stop(daemon);
  ::unsetenv("DBUS_SYSTEM_BUS_ADDRESS");
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message.find("MPS unit nvdra-mps-uid-12345.service: cannot connect to the system bus"),
            std::string::npos)
      << st.error().message;
}

TEST(MpsManagerAuto, SystemdOnlyOnASystemdHostOutsideAContainer) {
  EXPECT_EQ(auto_mps_manager({true, ""}).kind, MpsManagerKind::kSystemd);
  const auto in_container = auto_mps_manager({true, "/.dockerenv exists"});
  EXPECT_EQ(in_container.kind, MpsManagerKind::kProcess);
  EXPECT_NE(in_container.why.find("/.dockerenv exists"), std::string::npos) << in_container.why;
  const auto no_systemd = auto_mps_manager({false, ""});
  EXPECT_EQ(no_systemd.kind, MpsManagerKind::kProcess);
  EXPECT_NE(no_systemd.why.find("does not run systemd"), std::string::npos) << no_systemd.why;
}

}  // namespace
}  // namespace nvdra::claims
