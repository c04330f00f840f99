#include "agent/status/agent_status.hpp"

#include <algorithm>
#include <chrono>

namespace nvdra::status {

namespace sb = systemd_bus;

namespace {

// Removes the items of `driver` and appends `items`; true when the list changed.
template <class T>
bool replace_for_driver(std::vector<T>& list, const std::string& driver, std::vector<T> items) {
  std::vector<T> next;
  for (auto& item : list)
    if (item.driver != driver) next.push_back(item);
  for (auto& item : items) next.push_back(std::move(item));
  if (next == list) return false;
  list = std::move(next);
  return true;
}

// The same for the shared claim rows, a list of them per set_claims() call: the other drivers'
// lists are kept, not copied.
bool replace_for_driver(sb::ClaimRows& list, const std::string& driver, const sb::ClaimRows& items) {
  sb::ClaimRows next;
  for (const auto& part : list.parts())
    if (part->empty() || part->front()->driver != driver) next.append(part);
  for (const auto& part : items.parts()) next.append(part);
  if (next == list) return false;
  list = std::move(next);
  return true;
}

}  // namespace

AgentStatus::AgentStatus(std::string version, std::string node_name) {
  snapshot_.version = std::move(version);
  snapshot_.node_name = std::move(node_name);
}

void AgentStatus::set_ready(bool ready) {
  if (snapshot_.ready == ready) return;
  snapshot_.ready = ready;
  changed();
}

void AgentStatus::set_driver(sb::DriverStatus driver) {
  auto it = std::find_if(snapshot_.drivers.begin(), snapshot_.drivers.end(),
                         [&](const sb::DriverStatus& d) { return d.name == driver.name; });
  if (it == snapshot_.drivers.end()) {
    snapshot_.drivers.push_back(std::move(driver));
  } else {
    if (*it == driver) return;
    *it = std::move(driver);
  }
  changed();
}

void AgentStatus::set_devices(const std::string& driver, std::vector<sb::DeviceStatus> devices) {
  if (replace_for_driver(snapshot_.devices, driver, std::move(devices))) changed();
}

void AgentStatus::set_claims(const std::string& driver, const sb::ClaimRows& claims) {
  if (replace_for_driver(snapshot_.claims, driver, claims)) changed();
}

void AgentStatus::set_imex(sb::ImexStatus imex) {
  if (snapshot_.imex == imex) return;
  snapshot_.imex = std::move(imex);
  changed();
}

void AgentStatus::set_fabric(sb::FabricStatus fabric) {
  if (snapshot_.fabric == fabric) return;
  snapshot_.fabric = std::move(fabric);
  changed();
}

void AgentStatus::record_error(std::string component, std::string message) {
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  auto& errors = snapshot_.last_errors;
  errors.push_back(sb::ErrorRecord{
      static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(now).count()),
      std::move(component), std::move(message)});
  if (errors.size() > sb::StatusSnapshot::kMaxErrors)
    errors.erase(errors.begin(), errors.begin() + static_cast<std::ptrdiff_t>(errors.size() - sb::StatusSnapshot::kMaxErrors));
  changed();
}

void AgentStatus::changed() {
  for (auto& l : listeners_) l(snapshot_);
}

}  // namespace nvdra::status
