#pragma once
// What the agent knows about the host's IMEX unit (--imex-unit, default nvidia-imex.service) and
// what --imex-check does with it. warn: report transitions only; enforce: also refuse new channel
// prepares while the unit is not active (prepared claims are left alone); off: do not watch.
// The agent never starts, stops or restarts the unit: the operator owns it (seed "driver behaviour").
#include <string>

#include "agent/base/result.hpp"

namespace nvdra::imex {

enum class CheckPolicy { kWarn, kEnforce, kOff };
const char* to_string(CheckPolicy policy);

// systemd's org.freedesktop.systemd1.Unit properties.
struct UnitState {
  std::string load_state;    // loaded, not-found, masked, …
  std::string active_state;  // active, reloading, inactive, failed, activating, deactivating
  std::string sub_state;     // running, dead, …
  bool operator==(const UnitState&) const = default;
};

enum class Reach {
  kUnknown,    // not read yet (no bus connection so far)
  kKnown,      // `state` is what systemd said last
  kNoSystemd,  // the bus answered but systemd did not (container without the host's bus, …)
};

struct UnitView {
  std::string unit;
  Reach reach = Reach::kUnknown;
  UnitState state;
  std::string problem;  // why the state is not known
  bool operator==(const UnitView&) const = default;
};

// active, or reloading (the daemon keeps running through a reload).
bool is_active(const UnitState& state);
// "load=loaded active=active sub=running".
std::string describe(const UnitState& state);
// One line for the log and status: the state, or why it is unknown.
std::string describe(const UnitView& view);

// Whether a new channel prepare may go on. Only kEnforce refuses: while the unit is not active, or
// its state cannot be confirmed (fail closed: enforce exists to keep workloads off a broken host).
Status prepare_allowed(CheckPolicy policy, const UnitView& view);

}  // namespace nvdra::imex
