#pragma once
// DraService — the version-neutral core of the DRA node service (v1 and v1beta1 both call it).
// One call may carry many claims: each runs concurrently in its own coroutine, under the claim's
// UID lock (ClaimLocks), and ends as that claim's entry in the result map; a failing claim never
// fails its neighbours. Only a malformed request (validate()) is an RPC error.
// io_context thread only. Cancelling prepare()/unprepare() cancels every claim coroutine of the
// call and waits for them to unwind before it completes.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/kubelet/claim_handler.hpp"
#include "agent/kubelet/claim_locks.hpp"

namespace spdlog { class logger; }

namespace nvdra::kubelet {

struct PrepareOutcome {
  std::vector<PreparedDevice> devices;
  std::string error;  // non-empty: preparing this claim failed, devices are ignored
};
using PrepareResults = std::map<std::string, PrepareOutcome>;  // key: claim UID
using UnprepareResults = std::map<std::string, std::string>;   // key: claim UID, value: error or ""

class DraService {
 public:
  DraService(boost::asio::any_io_executor ex, ClaimHandler& handler, std::string driver_name);

  // Empty when the request can be worked on; otherwise the reason, naming the claim index and field.
  static std::optional<std::string> validate(const std::vector<ClaimRef>& claims);

  boost::asio::awaitable<PrepareResults> prepare(std::vector<ClaimRef> claims);
  boost::asio::awaitable<UnprepareResults> unprepare(std::vector<ClaimRef> claims);

  const ClaimLocks& locks() const { return locks_; }

 private:
  boost::asio::awaitable<void> prepare_one(ClaimRef claim, std::shared_ptr<PrepareOutcome> out);
  boost::asio::awaitable<void> unprepare_one(ClaimRef claim, std::shared_ptr<std::string> out);

  boost::asio::any_io_executor ex_;
  ClaimHandler& handler_;
  std::string driver_;
  ClaimLocks locks_;
  std::shared_ptr<spdlog::logger> log_;
};

}  // namespace nvdra::kubelet
