#include "agent/config/loader.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

namespace nvdra::config {
namespace {

class LoaderTest : public ::testing::Test {
 protected:
  Result<Invocation> load(std::vector<std::string> args) {
    return load_invocation(args, [this](const char* name) -> const char* {
      auto it = env_.find(name);
      return it == env_.end() ? nullptr : it->second.c_str();
    }, "");
  }
  std::string write_file(const std::string& text) {
    auto path = std::filesystem::temp_directory_path() /
                ("nvdra-loader-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "-" +
                 ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".yaml");
    std::ofstream(path) << text;
    files_.push_back(path);
    return path.string();
  }
  void TearDown() override {
    for (auto& f : files_) std::filesystem::remove(f);
  }
  std::map<std::string, std::string> env_;
  std::vector<std::filesystem::path> files_;
};

TEST_F(LoaderTest, DefaultsMatchUpstreamFlags) {
  auto inv = load({"--node-name", "node-a"});
  ASSERT_TRUE(inv) << inv.error().message;
  const Options& o = inv->options;
  EXPECT_EQ(o.node_name, "node-a");
  EXPECT_EQ(o.namespace_name, "default");
  EXPECT_EQ(o.cdi_root, "/etc/cdi");
  EXPECT_EQ(o.kubelet_registrar_dir, "/var/lib/kubelet/plugins_registry");
  EXPECT_EQ(o.kubelet_plugins_dir, "/var/lib/kubelet/plugins");
  EXPECT_EQ(o.healthcheck_port, -1);
  EXPECT_DOUBLE_EQ(o.kube_api_qps, 5);
  EXPECT_EQ(o.kube_api_burst, 10);
  EXPECT_EQ(o.api_reconnect_spread, std::chrono::seconds(30));  // nvdra's own (issue #33): README, fleet
  EXPECT_EQ(o.host_root, "/");
  EXPECT_EQ(o.drivers.size(), 2u);
}

TEST_F(LoaderTest, FlagBeatsEnvBeatsFileBeatsDefault) {
  auto file = write_file("node-name: from-file\nnamespace: file-ns\ncdi-root: /file/cdi\nkube-api-burst: 7\n");
  env_["NAMESPACE"] = "env-ns";
  env_["CDI_ROOT"] = "/env/cdi";
  auto inv = load({"--config", file, "--cdi-root", "/flag/cdi"});
  ASSERT_TRUE(inv) << inv.error().message;
  EXPECT_EQ(inv->options.node_name, "from-file");
  EXPECT_EQ(inv->options.namespace_name, "env-ns");
  EXPECT_EQ(inv->options.cdi_root, "/flag/cdi");
  EXPECT_EQ(inv->options.kube_api_burst, 7);
  EXPECT_EQ(inv->options.kube_api_qps, 5);
}

TEST_F(LoaderTest, AnEmptyValueAfterTheEqualsSignIsTheEmptyValueAsInGo) {
  auto inv = load({"--node-name=n", "--http-endpoint=:8080", "--metrics-path="});
  ASSERT_TRUE(inv) << inv.error().message;
  EXPECT_EQ(inv->options.http_endpoint, ":8080");
  EXPECT_EQ(inv->options.metrics_path, "");
  inv = load({"--node-name", "n", "--metrics-path", ""});
  ASSERT_TRUE(inv) << inv.error().message;
  EXPECT_EQ(inv->options.metrics_path, "");
  EXPECT_EQ(load({"--node-name", "n"})->options.metrics_path, "/metrics");
}

TEST_F(LoaderTest, BadFlagValueNamesTheFlag) {
  auto inv = load({"--node-name", "n", "--kube-api-qps", "fast"});
  ASSERT_FALSE(inv);
  EXPECT_EQ(inv.error().message, "--kube-api-qps: invalid value \"fast\": must be a number above 0");
}

TEST_F(LoaderTest, BadEnvValueNamesTheVariable) {
  env_["HEALTHCHECK_PORT"] = "70000";
  auto inv = load({"--node-name", "n"});
  ASSERT_FALSE(inv);
  EXPECT_EQ(inv.error().message,
            "environment variable HEALTHCHECK_PORT: invalid value \"70000\": must be an integer from -1 to 65535");
}

TEST_F(LoaderTest, BadFileValueNamesFileAndLine) {
  auto file = write_file("node-name: n\n\nlog-format: xml\n");
  auto inv = load({"--config", file});
  ASSERT_FALSE(inv);
  EXPECT_EQ(inv.error().message, file + ":3: log-format: invalid value \"xml\": allowed: text, json");
}

TEST_F(LoaderTest, UnknownFileKeyIsAnError) {
  auto file = write_file("node-name: n\nnode_name: m\n");
  auto inv = load({"--config", file});
  ASSERT_FALSE(inv);
  EXPECT_NE(inv.error().message.find(file + ":2: unknown key 'node_name'"), std::string::npos);
}

TEST_F(LoaderTest, MissingConfigFileNamesIt) {
  auto inv = load({"--config", "/nonexistent/agent.yaml"});
  ASSERT_FALSE(inv);
  EXPECT_NE(inv.error().message.find("/nonexistent/agent.yaml: cannot read config file"), std::string::npos);
}

TEST_F(LoaderTest, NodeNameIsRequiredToRun) {
  auto inv = load({});
  ASSERT_FALSE(inv);
  EXPECT_NE(inv.error().message.find("--node-name (env NODE_NAME) is required"), std::string::npos);
}

TEST_F(LoaderTest, GatesMergeFileThenEnvThenFlag) {
  auto file = write_file("node-name: n\nfeature-gates:\n  MPSSupport: true\n  TimeSlicingSettings: true\n");
  env_["FEATURE_GATES"] = "TimeSlicingSettings=false,DynamicMIG=false";
  auto inv = load({"--config", file, "--feature-gates", "DynamicMIG=true,MPSSupport=false"});
  ASSERT_TRUE(inv) << inv.error().message;
  EXPECT_FALSE(inv->options.gates.enabled(gate::kMPSSupport));
  EXPECT_FALSE(inv->options.gates.enabled(gate::kTimeSlicingSettings));
  EXPECT_TRUE(inv->options.gates.enabled(gate::kDynamicMIG));
}

TEST_F(LoaderTest, FabricTopologySupportFromEnvironmentTurnsTheGateOnOrOff) {
  env_["FABRIC_TOPOLOGY_SUPPORT"] = "false";
  auto off = load({"--node-name", "n"});
  ASSERT_TRUE(off) << off.error().message;
  EXPECT_FALSE(off->options.gates.enabled(gate::kFabricTopologySupport));
  env_["FABRIC_TOPOLOGY_SUPPORT"] = "true";
  auto on = load({"--node-name", "n"});
  ASSERT_TRUE(on) << on.error().message;
  EXPECT_TRUE(on->options.gates.enabled(gate::kFabricTopologySupport));
  env_["FABRIC_TOPOLOGY_SUPPORT"] = "maybe";
  auto bad = load({"--node-name", "n"});
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message.rfind("environment variable FABRIC_TOPOLOGY_SUPPORT: invalid value \"maybe\"", 0), 0u)
      << bad.error().message;
}

TEST_F(LoaderTest, FabricManagerEndpointComesFromUpstreamsEnvironment) {
  auto unset = load({"--node-name", "n"});
  ASSERT_TRUE(unset) << unset.error().message;
  EXPECT_FALSE(unset->options.fabricmanager_address);
  EXPECT_EQ(unset->options.fabricmanager_unix_socket, "");
  env_["NVIDIA_FABRICMANAGER_ADDRESS"] = "";
  env_["NVIDIA_FABRICMANAGER_UNIX_SOCKET"] = "/run/fm.sock";
  auto set = load({"--node-name", "n"});
  ASSERT_TRUE(set) << set.error().message;
  EXPECT_EQ(set->options.fabricmanager_address, std::optional<std::string>(""));  // set, even empty: TCP
  EXPECT_EQ(set->options.fabricmanager_unix_socket, "/run/fm.sock");
}

TEST_F(LoaderTest, HostManagedImexOverridesAreReportedForLogging) {
  auto inv = load({"--node-name", "n", "--feature-gates", "HostManagedIMEX=true"});
  ASSERT_TRUE(inv) << inv.error().message;
  EXPECT_EQ(inv->log_notes.size(), 2u);
  EXPECT_FALSE(inv->options.gates.enabled(gate::kComputeDomainCliques));
}

TEST_F(LoaderTest, UnknownGateAndBrokenRuleAreErrors) {
  auto unknown = load({"--node-name", "n", "--feature-gates", "Nope=true"});
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().message, "--feature-gates: unrecognized feature gate: Nope");
  auto rule = load({"--node-name", "n", "--feature-gates", "DynamicMIG=true,MPSSupport=true"});
  ASSERT_FALSE(rule);
  EXPECT_NE(rule.error().message.find("mutually exclusive"), std::string::npos);
}

TEST_F(LoaderTest, DriversAreValidated) {
  auto ok = load({"--node-name", "n", "--drivers", "gpu"});
  ASSERT_TRUE(ok);
  EXPECT_TRUE(ok->options.driver_enabled(DriverKind::kGpu));
  EXPECT_FALSE(ok->options.driver_enabled(DriverKind::kComputeDomain));
  auto bad = load({"--node-name", "n", "--drivers", "gpu,tpu"});
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message,
            "--drivers: invalid value \"gpu,tpu\": unknown driver \"tpu\" (allowed: gpu, compute-domain)");
}

TEST_F(LoaderTest, BooleanFlagsTakeGoStyleValues) {
  auto inv = load({"--node-name", "n", "--controller=false", "--gpu-clique-label-enabled=F"});
  ASSERT_TRUE(inv) << inv.error().message;
  EXPECT_FALSE(inv->options.controller);
  EXPECT_FALSE(inv->options.gpu_clique_label_enabled);
  auto bare = load({"--node-name", "n", "--controller"});
  ASSERT_TRUE(bare) << bare.error().message;
  EXPECT_TRUE(bare->options.controller);
}

TEST_F(LoaderTest, VerbosityMapsToLevelUnlessLevelGiven) {
  auto v = load({"--node-name", "n", "-v", "6"});
  ASSERT_TRUE(v);
  EXPECT_EQ(v->options.log_level, spdlog::level::trace);
  auto both = load({"--node-name", "n", "-v", "6", "--log-level", "warn"});
  ASSERT_TRUE(both);
  EXPECT_EQ(both->options.log_level, spdlog::level::warn);
}

TEST_F(LoaderTest, ConsumableSharesKeepsUpstreamsSyntaxErrorAndNeedsItsGate) {
  auto bad = load({"--node-name", "n", "--consumable-shares", "-3"});
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message, "--consumable-shares: invalid value for --consumable-shares: \"-3\" (must be "
                                 "'disabled', 'memory', 'unlimited', or a positive integer)");
  auto memory = load({"--node-name", "n", "--consumable-shares", "memory"});
  ASSERT_FALSE(memory);
  EXPECT_EQ(memory.error().message, "--consumable-shares requires feature gate ConsumableShares to be enabled");
  for (const char* v : {"memory", "unlimited", "3"}) {
    auto on = load({"--node-name", "n", "--consumable-shares", v, "--feature-gates", "ConsumableShares=true"});
    ASSERT_TRUE(on) << v << ": " << on.error().message;
    EXPECT_EQ(on->options.consumable_shares, v);
  }
  EXPECT_TRUE(load({"--node-name", "n", "--consumable-shares", "disabled"}));
}

TEST_F(LoaderTest, UnknownFlagAndPositionalAreRejected) {
  EXPECT_FALSE(load({"--node-name", "n", "--no-such-flag"}));
  EXPECT_FALSE(load({"--node-name", "n", "stray"}));
}

TEST_F(LoaderTest, HelpAndVersionPrintAndExit) {
  auto help = load({"--help"});
  ASSERT_TRUE(help);
  EXPECT_EQ(help->action, Invocation::Action::kPrintAndExit);
  EXPECT_NE(help->output.find("--kubelet-registrar-directory-path"), std::string::npos);
  EXPECT_NE(help->output.find("KUBELET_REGISTRAR_DIRECTORY_PATH"), std::string::npos);
  auto version = load({"--version"});
  ASSERT_TRUE(version);
  EXPECT_EQ(version->output.rfind("nvdra-agent ", 0), 0u);
}

TEST_F(LoaderTest, DevicesSubcommandNeedsNoNodeName) {
  auto inv = load({"devices", "-o", "json"});
  ASSERT_TRUE(inv) << inv.error().message;
  EXPECT_EQ(inv->action, Invocation::Action::kDevices);
  EXPECT_EQ(inv->devices_output_format, "json");
}

}  // namespace
}  // namespace nvdra::config
