#pragma once
// The CDI spec as plain data (CDI SPEC.md "CDI JSON Specification"). Only the fields nvdra writes are
// modelled; spec_json.hpp turns a Spec into JSON and computes its minimum cdiVersion.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace nvdra::cdi {

struct DeviceNode {
  std::string path;                      // inside the container
  std::optional<std::string> host_path;  // needs cdiVersion 0.5.0; absent = same as path
  std::string type;                      // "c", "b" or "" (let the runtime stat the host node)
  std::optional<int64_t> major;
  std::optional<int64_t> minor;
  std::optional<uint32_t> file_mode;     // decimal in JSON, e.g. 0666 -> 438
  std::string permissions;               // "" = runtime default "rwm"
  std::optional<uint32_t> uid;
  std::optional<uint32_t> gid;
  bool operator==(const DeviceNode&) const = default;
};

struct Mount {
  std::string host_path;
  std::string container_path;
  std::string type;  // needs cdiVersion 0.4.0 when set
  std::vector<std::string> options;
  bool operator==(const Mount&) const = default;
};

struct Hook {
  std::string hook_name;  // createRuntime | createContainer | startContainer | poststart | poststop
  std::string path;       // absolute
  std::vector<std::string> args;  // argv, args[0] included
  std::vector<std::string> env;
  std::optional<uint32_t> timeout;  // seconds, > 0
  bool operator==(const Hook&) const = default;
};

struct ContainerEdits {
  std::vector<std::string> env;  // "NAME=value"
  std::vector<DeviceNode> device_nodes;
  std::vector<Mount> mounts;
  std::vector<Hook> hooks;
  std::vector<uint32_t> additional_gids;  // needs cdiVersion 0.7.0

  bool empty() const {
    return env.empty() && device_nodes.empty() && mounts.empty() && hooks.empty() && additional_gids.empty();
  }
  // Appends other's edits, skipping entries already present (same value; for device nodes and
  // mounts the same container path), so composing builders never yields duplicates.
  void append(const ContainerEdits& other);
  // Removes every entry that `common` already carries (nvcdi drops device-level edits that the
  // spec-level edits repeat).
  void remove_common(const ContainerEdits& common);
  bool operator==(const ContainerEdits&) const = default;
};

struct Device {
  std::string name;  // CDI device name: [A-Za-z0-9][A-Za-z0-9_.-]*, alnum at both ends
  std::map<std::string, std::string> annotations;  // needs cdiVersion 0.6.0
  ContainerEdits edits;
  bool operator==(const Device&) const = default;
};

// Spec-level edits, shared rather than copied: every claim spec of a node carries the driver's same
// common edits (its libraries, hooks and nodes), and a copy of them per claim was 5 % of a
// 64-prepare round's instructions.
using SharedEdits = std::shared_ptr<const ContainerEdits>;

struct Spec {
  std::string kind;  // "<vendor>/<class>"
  std::map<std::string, std::string> annotations;  // needs cdiVersion 0.6.0
  std::vector<Device> devices;
  SharedEdits edits;  // applied when any device of the spec is requested; null: none

  const ContainerEdits& spec_edits() const {
    static const ContainerEdits kNone;
    return edits ? *edits : kNone;
  }
  bool operator==(const Spec& o) const {
    return kind == o.kind && annotations == o.annotations && devices == o.devices && spec_edits() == o.spec_edits();
  }
};

}  // namespace nvdra::cdi
