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

namespace {

sb::ClaimRow claim_row(const std::string& driver, const std::string& uid, const claims::CheckpointedClaim& claim) {
  sb::ClaimStatus row{uid, claim.ns, claim.name, driver, std::string(claims::to_string(claim.state)), {}};
  collect_device_names(claim.prepared_devices, row.devices);
  return std::make_shared<const sb::ClaimStatus>(std::move(row));
}

}  // namespace

StatusReportingHandler::StatusReportingHandler(boost::asio::any_io_executor ex, std::string driver,
                                               kubelet::ClaimHandler& inner, status::AgentStatus& status,
                                               std::function<const claims::Checkpoint*()> checkpoint)
    : ex_(std::move(ex)),
      driver_(std::move(driver)),
      inner_(inner),
      status_(status),
      checkpoint_(std::move(checkpoint)),
      rows_([driver = driver_](const std::string& uid, const claims::CheckpointedClaim& claim) {
        return claim_row(driver, uid, claim);
      }) {}

StatusReportingHandler::~StatusReportingHandler() { *alive_ = false; }

void StatusReportingHandler::schedule_refresh(const std::string& uid) {
  touched_.insert(uid);
  if (refresh_pending_) return;
  refresh_pending_ = true;
  boost::asio::post(ex_, [this, alive = alive_] {
    if (!*alive) return;
    refresh_pending_ = false;
    refresh_touched();
  });
}

void StatusReportingHandler::refresh() {
  touched_.clear();
  const auto* cp = checkpoint_();
  if (!cp) return rows_.forget();
  rows_.rebuild(*cp);
  rechunk_all();
  publish();
}

// Only the rows of the claims the calls touched are read again (ClaimRowCache), and only their
// chunks listed again.
void StatusReportingHandler::refresh_touched() {
  const auto* cp = checkpoint_();
  if (!cp) return refresh();
  const uint64_t rebuilds = rows_.rebuilds();
  rows_.update(*cp, touched_);
  if (rows_.rebuilds() != rebuilds) {
    rechunk_all();
  } else {
    std::string_view last;
    for (const auto& uid : touched_) {  // sorted: each chunk once
      const std::string_view prefix = std::string_view(uid).substr(0, kChunkPrefix);
      if (prefix != last) rechunk(prefix);
      last = prefix;
    }
  }
  touched_.clear();
  publish();
}

// The list of the rows whose UIDs begin with `prefix` (all of a shorter UID), made again.
void StatusReportingHandler::rechunk(std::string_view prefix) {
  std::vector<sb::ClaimRow> rows;  // the cached rows themselves, shared (claim_rows.hpp)
  const auto& all = rows_.rows();
  const auto in_chunk = [&](const auto& it) { return std::string_view(it->first).substr(0, kChunkPrefix) == prefix; };
  for (auto it = all.lower_bound(std::string(prefix)); it != all.end() && in_chunk(it); ++it) rows.push_back(it->second);
  const std::string key(prefix);
  if (rows.empty()) chunks_.erase(key);
  else chunks_.insert_or_assign(key, std::make_shared<const std::vector<sb::ClaimRow>>(std::move(rows)));
}

void StatusReportingHandler::rechunk_all() {
  chunks_.clear();
  std::string prefix;
  std::vector<sb::ClaimRow> rows;
  const auto close = [&] {
    if (!rows.empty()) chunks_.emplace(prefix, std::make_shared<const std::vector<sb::ClaimRow>>(std::move(rows)));
    rows.clear();
  };
  for (const auto& [uid, row] : rows_.rows()) {  // sorted: a chunk's rows come together
    if (uid.compare(0, kChunkPrefix, prefix) != 0 || rows.empty()) close(), prefix = uid.substr(0, kChunkPrefix);
    rows.push_back(row);
  }
  close();
}

void StatusReportingHandler::publish() {
  sb::ClaimRows rows;
  for (const auto& [prefix, chunk] : chunks_) rows.append(chunk);
  status_.set_claims(driver_, rows);
}

boost::asio::awaitable<Result<std::vector<kubelet::PreparedDevice>>> StatusReportingHandler::prepare(
    kubelet::ClaimRef claim) {
  auto result = co_await inner_.prepare(claim);
  if (!result) status_.record_error(driver_, "prepare " + claim.describe() + ": " + result.error().describe());
  schedule_refresh(claim.uid);
  co_return result;
}

boost::asio::awaitable<Status> StatusReportingHandler::unprepare(kubelet::ClaimRef claim) {
  auto result = co_await inner_.unprepare(claim);
  if (!result) status_.record_error(driver_, "unprepare " + claim.describe() + ": " + result.error().describe());
  schedule_refresh(claim.uid);
  co_return result;
}

}  // namespace nvdra::drivers
