#pragma once
// The node's NVLink clique, re-read while the compute-domain driver serves in driver-managed mode
// (issue #30 point 6; upstream #1264: a GPU's fabric may still be registering, IN_PROGRESS, when the
// driver starts, and reaches COMPLETED later), and in HostManagedIMEX mode too. follow_clique() re-reads every GPU's fabric facts on
// the worker pool, every kCliquePendingPeriod while the handler's clique is pending, else every
// --clique-reread-seconds (kCliquePeriod by default: upstream re-reads every 10 minutes). When the clique becomes known or changes, the
// handler uses it for the prepares that start from then on and `on_changed` runs (republish, label).
// A failed re-read is logged and the clique in use kept. Ends only by cancellation.
#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "agent/base/result.hpp"
#include "agent/runtime/component.hpp"
#include "cdi/nvidia_caps.hpp"

namespace nvdra::drivers {

inline constexpr std::chrono::seconds kCliquePendingPeriod{5};
inline constexpr std::chrono::seconds kCliquePeriod{600};

// What a daemon claim on a node with a clique needs: the nvidia-caps major and fabric-imex-mgmt. Blocking.
struct FabricCaps {
  int64_t major = 0;
  cdi::CapNode fabric_mgmt;
};
Result<FabricCaps> read_fabric_caps(const std::string& host_root);

// The clique a handler uses now; `pending`: not known yet (re-read every kCliquePendingPeriod).
struct CliqueInUse {
  std::string id;
  bool pending = false;
};

// `with_caps`: a known clique also needs FabricCaps (driver-managed daemon claims); `apply` gets them.
boost::asio::awaitable<void> follow_clique(RunContext& ctx, bool with_caps, std::function<CliqueInUse()> current,
                                           std::function<void(const std::string& clique, FabricCaps caps)> apply);

}  // namespace nvdra::drivers
