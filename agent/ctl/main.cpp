// nvdractl — host tool: shows a running nvdra-agent's state, read over D-Bus from io.nvdra.Agent1.
// Exit status: 0 ok, 1 unexpected failure, 2 usage, 3 agent or bus not available, 4 access denied.
// `nvdractl validate -f FILE` needs no agent: its exit status is in agent/ctl/validate_command.hpp.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <map>

#include "agent/ctl/render.hpp"
#include "agent/ctl/status_client.hpp"
#include "agent/ctl/validate_command.hpp"

#ifndef NVDRA_VERSION
#error "NVDRA_VERSION must be defined by the build"
#endif

namespace {

constexpr int kExitUnexpected = 1;
constexpr int kExitUsage = 2;
constexpr int kExitUnavailable = 3;
constexpr int kExitDenied = 4;

}  // namespace

int main(int argc, char** argv) {
  using nvdra::ctl::Command;
  using nvdra::ctl::Format;
  CLI::App app{"nvdractl: show the state of the nvdra agent on this host (over D-Bus, io.nvdra.Agent1)", "nvdractl"};
  app.set_version_flag("--version", std::string("nvdractl ") + NVDRA_VERSION);
  app.require_subcommand(1);
  nvdra::ctl::ClientOptions client;
  std::string output = "table";
  app.add_option("-o,--output", output, "Output format: table or json")->check(CLI::IsMember({"table", "json"}));
  app.add_option("--address", client.address,
                 "D-Bus address to use instead of the system bus (e.g. unix:path=/run/dbus/system_bus_socket)");
  app.add_option("--timeout-ms", client.timeout_ms, "How long to wait for the agent's answer")
      ->check(CLI::Range(1, 600000));
  const std::map<std::string, std::pair<Command, const char*>> commands = {
      {"status", {Command::kStatus, "Agent version, readiness, drivers and their registration, recent errors"}},
      {"devices", {Command::kDevices, "Published devices with their health"}},
      {"claims", {Command::kClaims, "Claims prepared on this node"}},
      {"imex", {Command::kImex, "IMEX mode and the host IMEX unit's state"}},
      {"fabric", {Command::kFabric, "the Fabric Manager connection and the NVSwitch partitions held for claims"}},
  };
  for (const auto& [name, what] : commands) app.add_subcommand(name, what.second)->fallthrough();
  nvdra::ctl::ValidateArgs validate;
  auto* validate_cmd = app.add_subcommand(
      "validate", "Check the GPU and ComputeDomain opaque configs in YAML or JSON manifests, offline, as prepare would");
  validate_cmd->add_option("-f,--filename", validate.file, "Manifest file (multi-document YAML or JSON); - for stdin")
      ->required();
  validate_cmd->add_option("--feature-gates", validate.feature_gates,
                           "The agent's feature gates (A=true,B=false): configs are checked under them");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : kExitUsage;
  }
  if (validate_cmd->parsed()) return nvdra::ctl::run_validate(validate, stdout, stderr);
  Command command = Command::kStatus;
  for (const auto* sub : app.get_subcommands()) command = commands.at(sub->get_name()).first;

  auto status = nvdra::ctl::fetch_status(client);
  if (!status) {
    std::fprintf(stderr, "nvdractl: %s\n", status.error().message.c_str());
    switch (status.error().code) {
      case nvdra::ErrorCode::kUnavailable: return kExitUnavailable;
      case nvdra::ErrorCode::kPermissionDenied: return kExitDenied;
      default: return kExitUnexpected;
    }
  }
  const auto text = nvdra::ctl::render(*status, command, output == "json" ? Format::kJson : Format::kTable);
  std::fputs(text.c_str(), stdout);
  return 0;
}
