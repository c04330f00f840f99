#include "agent/drivers/status_reporting.hpp"

#include <boost/asio/post.hpp>

#include "agent/claims/checkpoint/checkpoint_model.hpp"
#include "agent/status/agent_status.hpp"

namespace nvdra::drivers {

namespace sb = systemd_bus;

namespace {

std::string string_attribute(const PublishedDevice& d, const char* name) {
  auto it = d.attributes.find(name);
  if (it == d.attributes.end()) return {};
  if (const auto* s = std::get_if<std::string>(&it->second)) return *s;
  return {};
}

// Every device name (Go field "DeviceName") in upstream's PreparedDeviceGroup list, in order.
void collect_device_names(const boost::json::value& v, std::vector<std::string>& out) {
  if (const auto* o = v.if_object()) {
    for (const auto& [key, value] : *o) {
      if ((key == "DeviceName" || key == "deviceName") && value.is_string())
        out.emplace_back(value.get_string());
      else
        collect_device_names(value, out);
    }
  } else if (const auto* a = v.if_array()) {
    for (const auto& item : *a) collect_device_names(item, out);
  }
}

}  // namespace

std::vector<sb::DeviceStatus> device_rows(const std::string& driver, const std::vector<PublishedDevice>& devices) {
  std::vector<sb::DeviceStatus> rows;
  for (const auto& d : devices)
    rows.push_back(sb::DeviceStatus{driver, d.name, string_attribute(d, "type"), string_attribute(d, "uuid"),
                                    sb::kHealthUnknown});  // nothing measures device health yet
  return rows;
}

std::vector<sb::ClaimStatus> claim_rows(const std::string& driver, const claims::Checkpoint& checkpoint) {
  std::vector<sb::ClaimStatus> rows;
  for (const auto& [uid, claim] : checkpoint.claims) {
    sb::ClaimStatus row{uid, claim.ns, claim.name, driver, std::string(claims::to_string(claim.state)), {}};
    collect_device_names(claim.prepared_devices, row.devices);
    rows.push_back(std::move(row));
  }
  return rows;
}

StatusReportingHandler::StatusReportingHandler(boost::asio::any_io_executor ex, std::string driver,
                                               kubelet::ClaimHandler& inner, status::AgentStatus& status,
                                               std::function<const claims::Checkpoint*()> checkpoint)
    : ex_(std::move(ex)),
      driver_(std::move(driver)),
      inner_(inner),
      status_(status),
      checkpoint_(std::move(checkpoint)) {}

StatusReportingHandler::~StatusReportingHandler() { *alive_ = false; }

void StatusReportingHandler::schedule_refresh() {
  if (refresh_pending_) return;
  refresh_pending_ = true;
  boost::asio::post(ex_, [this, alive = alive_] {
    if (!*alive) return;
    refresh_pending_ = false;
    refresh();
  });
}

void StatusReportingHandler::refresh() {
  if (const auto* cp = checkpoint_()) status_.set_claims(driver_, claim_rows(driver_, *cp));
}

boost::asio::awaitable<Result<std::vector<kubelet::PreparedDevice>>> StatusReportingHandler::prepare(
    kubelet::ClaimRef claim) {
  auto result = co_await inner_.prepare(claim);
  if (!result) status_.record_error(driver_, "prepare " + claim.describe() + ": " + result.error().describe());
  schedule_refresh();
  co_return result;
}

boost::asio::awaitable<Status> StatusReportingHandler::unprepare(kubelet::ClaimRef claim) {
  auto result = co_await inner_.unprepare(claim);
  if (!result) status_.record_error(driver_, "unprepare " + claim.describe() + ": " + result.error().describe());
  schedule_refresh();
  co_return result;
}

}  // namespace nvdra::drivers
