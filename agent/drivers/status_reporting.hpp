#pragma once
// The bridge from a driver to AgentStatus: a ClaimHandler decorator that, after each prepare and
// unprepare, republishes the driver's claims from its checkpoint and records per-claim errors;
// and the conversions of published devices and checkpoint entries into status rows.
#include <boost/asio/any_io_executor.hpp>

#include <functional>
#include <map>
#include <set>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "agent/base/device.hpp"
#include "agent/drivers/claim_row_cache.hpp"
#include "agent/kubelet/claim_handler.hpp"
#include "agent/systemd_bus/status_snapshot.hpp"

namespace nvdra::claims { struct Checkpoint; }
namespace nvdra::status { class AgentStatus; }

namespace nvdra::drivers {

std::vector<systemd_bus::DeviceStatus> device_rows(const std::string& driver,
                                                   const std::vector<PublishedDevice>& devices);

class StatusReportingHandler final : public kubelet::ClaimHandler {
 public:
  // `checkpoint` answers the driver's current checkpoint (null: none yet).
  StatusReportingHandler(boost::asio::any_io_executor ex, std::string driver, kubelet::ClaimHandler& inner,
                         status::AgentStatus& status, std::function<const claims::Checkpoint*()> checkpoint);
  ~StatusReportingHandler() override;
  boost::asio::awaitable<Result<std::vector<kubelet::PreparedDevice>>> prepare(kubelet::ClaimRef claim) override;
  boost::asio::awaitable<Status> unprepare(kubelet::ClaimRef claim) override;
  void refresh();  // republish the claims now

 private:
  // After a claim call: one refresh per loop turn, however many calls finished in it (a burst of
  // 64 prepares rebuilds the claim rows once, not 64 times).
  void schedule_refresh(const std::string& uid);
  void refresh_touched();
  // The claim rows are published as lists of the rows whose UIDs share their first kChunkPrefix
  // characters (~256 for random UIDs): a call makes one new list of a few rows and the snapshot
  // shares the others, instead of a list of every row (issue #33: at 1,000 claims, copying the row
  // pointers after each call was ~8 % of the agent's CPU).
  static constexpr std::size_t kChunkPrefix = 2;
  void rechunk(std::string_view prefix);
  void rechunk_all();
  void publish();

  boost::asio::any_io_executor ex_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
  bool refresh_pending_ = false;
  std::set<std::string> touched_;  // claims of the calls since the last refresh
  std::string driver_;
  kubelet::ClaimHandler& inner_;
  status::AgentStatus& status_;
  std::function<const claims::Checkpoint*()> checkpoint_;
  ClaimRowCache<systemd_bus::ClaimRow> rows_;
  std::map<std::string, systemd_bus::ClaimRows::Part, std::less<>> chunks_;  // by UID prefix
};

}  // namespace nvdra::drivers
