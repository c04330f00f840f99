// No silent no-ops: option values and feature gates nvdra has no behaviour for stop the agent at
// start with one line naming them (README "Refused options and gates"); the rest take effect.
#include <gtest/gtest.h>

#include <map>

#include "agent/config/gate_limits.hpp"
#include "agent/config/loader.hpp"

namespace nvdra::config {
namespace {

Result<Invocation> load(std::vector<std::string> args, std::map<std::string, std::string> env = {}) {
  args.insert(args.begin(), {"--node-name", "n"});
  return load_invocation(args, [&env](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  }, "");
}

std::string refusal(std::vector<std::string> args, std::map<std::string, std::string> env = {}) {
  auto inv = load(std::move(args), std::move(env));
  if (inv) return "(accepted)";
  return inv.error().message;
}

TEST(Refusals, EveryLimitedGateIsRefusedAtItsOtherValueNamingItAndAcceptedAtItsOwn) {
  for (const auto& limit : gate_limits()) {
    const std::string name(limit.name);
    const std::string other = name + "=" + (limit.accepted ? "false" : "true");
    const std::string own = name + "=" + (limit.accepted ? "true" : "false");
    const auto message = refusal({"--feature-gates", other});
    EXPECT_EQ(message.rfind("--feature-gates: feature gate " + other + " is refused: ", 0), 0u) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos);
    EXPECT_EQ(refusal({"--feature-gates", own}), "(accepted)") << own;
  }
}

TEST(Refusals, AllAlphaAndAllBetaNeverSwitchARefusedGateSilently) {
  EXPECT_EQ(refusal({"--feature-gates", "AllAlpha=true"}).rfind(
                "--feature-gates: feature gate LoggingAlphaOptions=true (from AllAlpha=true) is refused: ", 0),
            0u);
  EXPECT_EQ(refusal({"--feature-gates", "AllBeta=false"}).rfind(
                "--feature-gates: feature gate ContextualLogging=false (from AllBeta=false) is refused: ", 0),
            0u);
  // Every refused alpha gate switched back off explicitly: AllAlpha then turns on only what nvdra does.
  auto inv = load({"--feature-gates",
                   "AllAlpha=true,DynamicMIG=false,PassthroughSupport=false,NVMLDeviceHealthCheck=false,"
                   "DeviceMetadata=false,DRAListTypeAttributes=false,FabricManagerPartitioning=false,"
                   "ConsumableShares=false,FabricTopologySupport=false,LoggingAlphaOptions=false"});
  ASSERT_TRUE(inv) << inv.error().message;
  EXPECT_TRUE(inv->options.gates.enabled(gate::kMPSSupport));
  EXPECT_TRUE(inv->options.gates.enabled(gate::kHostManagedIMEX));
}

TEST(Refusals, DriverManagedGatesMayBeOffUnderUpstreamsDependencyRule) {
  EXPECT_EQ(refusal({"--feature-gates", "HostManagedIMEX=true,IMEXDaemonsWithDNSNames=false,ComputeDomainCliques=false"}),
            "(accepted)");
  // Driver-managed IMEX acts on both gates (issue #29): off is accepted, upstream's rule between them stays.
  EXPECT_EQ(refusal({"--feature-gates", "IMEXDaemonsWithDNSNames=false,ComputeDomainCliques=false"}), "(accepted)");
  EXPECT_EQ(refusal({"--feature-gates", "ComputeDomainCliques=false"}), "(accepted)");
  EXPECT_NE(refusal({"--feature-gates", "IMEXDaemonsWithDNSNames=false"})
                .find("feature gate ComputeDomainCliques requires IMEXDaemonsWithDNSNames to also be enabled"),
            std::string::npos);
}

TEST(Refusals, UpstreamHostManagedSpellingRunsNvdrasHostManagedMode) {
  auto inv = load({"--imex-mode=hostManaged", "--feature-gates", "HostManagedIMEXDaemon=true"});
  ASSERT_TRUE(inv) << inv.error().message;
  EXPECT_TRUE(inv->options.gates.enabled(gate::kHostManagedIMEX));
  EXPECT_FALSE(inv->options.gates.enabled(gate::kIMEXDaemonsWithDNSNames));
  EXPECT_FALSE(inv->options.gates.enabled(gate::kComputeDomainCliques));
  ASSERT_FALSE(inv->log_notes.empty());
  EXPECT_NE(inv->log_notes[0].find("running nvdra's host-managed IMEX mode"), std::string::npos);
  // Upstream's rule and message stay.
  EXPECT_EQ(refusal({"--imex-mode=hostManaged"}),
            "--imex-mode: imex.mode=\"hostManaged\" requires the HostManagedIMEXDaemon feature gate to be enabled");
  EXPECT_NE(refusal({"--imex-mode=hostManaged", "--feature-gates", "HostManagedIMEXDaemon=true,HostManagedIMEX=false"})
                .find("HostManagedIMEX=false turns off"),
            std::string::npos);
  // driverManaged leaves the mode to HostManagedIMEX, nvdra's own spelling.
  auto dm = load({"--imex-mode=driverManaged", "--feature-gates", "HostManagedIMEXDaemon=true"});
  ASSERT_TRUE(dm);
  EXPECT_FALSE(dm->options.gates.enabled(gate::kHostManagedIMEX));
}

TEST(Refusals, OptionValuesWithoutBehaviourNameTheOptionAndTheSource) {
  // XIDs to ignore need the health monitor that reads them.
  EXPECT_EQ(refusal({"--additional-xids-to-ignore=45,79"}),
            "--additional-xids-to-ignore requires feature gate NVMLDeviceHealthCheck to be enabled (without it no XID "
            "is watched)");
  EXPECT_EQ(refusal({"--additional-xids-to-ignore=45,79", "--feature-gates", "NVMLDeviceHealthCheck=true"}),
            "(accepted)");
  EXPECT_EQ(refusal({}, {{"ADDITIONAL_XIDS_TO_IGNORE", ""}}), "(accepted)");
  // So does the recovery policy; an unknown policy names the allowed ones.
  EXPECT_EQ(refusal({}, {{"NVDRA_DEVICE_HEALTH_RECOVERY", "none"}}),
            "--device-health-recovery requires feature gate NVMLDeviceHealthCheck to be enabled (without it no "
            "device is tainted)");
  EXPECT_EQ(refusal({"--device-health-recovery=reset", "--feature-gates", "NVMLDeviceHealthCheck=true"}),
            "(accepted)");
  EXPECT_EQ(refusal({"--device-health-recovery=later", "--feature-gates", "NVMLDeviceHealthCheck=true"}),
            "--device-health-recovery: invalid value \"later\": allowed: none, reset, recovery-action");
  // The clique label is kept in driver-managed mode (issue #29); host-managed mode has none to keep.
  EXPECT_EQ(refusal({"--gpu-clique-label-enabled"}), "(accepted)");
  EXPECT_EQ(refusal({"--gpu-clique-label-enabled", "--feature-gates", "HostManagedIMEX=true"})
                .rfind("--gpu-clique-label-enabled: true is refused with HostManagedIMEX: ", 0),
            0u);
  EXPECT_EQ(refusal({}, {{"GPU_CLIQUE_LABEL_ENABLED", "false"}}), "(accepted)");
  EXPECT_EQ(refusal({"--imex-host-socket-path=/run/imex.sock"})
                .rfind("--imex-host-socket-path: \"/run/imex.sock\" is refused: ", 0),
            0u);
  EXPECT_EQ(refusal({"--imex-host-socket-path=/etc/nvidia-imex/imex_ctrl.sock"}), "(accepted)");
  EXPECT_EQ(refusal({"--imex-isolation=channel"}),
            "--imex-isolation: imex.isolation=\"channel\" is not supported yet: per-workload IMEX channel allocation "
            "is not implemented");
  EXPECT_EQ(refusal({"--imex-isolation=node"}),
            "--imex-isolation: unknown imex.isolation \"node\": must be \"domain\" or \"channel\"");
  EXPECT_EQ(refusal({"--imex-isolation=domain"}), "(accepted)");
}

TEST(Refusals, HelpListsUpstreamDeploymentSettingsAsIgnored) {
  auto help = load({"--help"});
  ASSERT_TRUE(help);
  const auto group = help->output.find("Ignored (upstream deployment settings with no meaning for nvdra):");
  ASSERT_NE(group, std::string::npos) << help->output;
  for (const char* name : {"--image-name", "--image-pull-secrets", "--image-pull-policy", "--service-account-name"})
    EXPECT_GT(help->output.find(name), group) << name;
  EXPECT_LT(help->output.find("--node-name"), group);
}

}  // namespace
}  // namespace nvdra::config
