#include "agent/systemd_bus/status_service.hpp"

#include <systemd/sd-bus.h>

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/serialize.hpp>

#include "agent/base/log.hpp"
#include "agent/systemd_bus/status_codec.hpp"
#include "agent/systemd_bus/status_json.hpp"

namespace asio = boost::asio;

namespace nvdra::systemd_bus {
namespace {

constexpr uint64_t kProperty = SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE;

}  // namespace

struct StatusCallbacks {
  static int on_name_reply(sd_bus_message* m, void* userdata, sd_bus_error* error);
  static int get_property(sd_bus* bus, const char* path, const char* interface, const char* property,
                          sd_bus_message* reply, void* userdata, sd_bus_error* error);
  static int method_get_status_json(sd_bus_message* m, void* userdata, sd_bus_error* error);
  static int method_get_claim(sd_bus_message* m, void* userdata, sd_bus_error* error);
};


StatusService::StatusService(asio::any_io_executor ex, BusEndpoint endpoint)
    : owned_(std::make_unique<BusConnection>(std::move(ex), std::move(endpoint))), bus_(owned_.get()) {
  hook_ = bus_->add_connect_hook([this](sd_bus* bus) { return on_connect(bus); });
}

StatusService::StatusService(BusConnection& shared) : bus_(&shared) {
  hook_ = bus_->add_connect_hook([this](sd_bus* bus) { return on_connect(bus); });
}

StatusService::~StatusService() {
  hook_.reset();
  drop_slots();
}

void StatusService::drop_slots() {
  object_slot_ = sd_bus_slot_unref(object_slot_);
  name_slot_ = sd_bus_slot_unref(name_slot_);
  owns_name_ = false;
}

asio::awaitable<void> StatusService::run() {
  if (owned_) {
    co_await owned_->run();
    co_return;
  }
  // A shared connection is run by its owner; stay alive (and registered) until cancelled.
  asio::steady_timer forever(co_await asio::this_coro::executor, asio::steady_timer::time_point::max());
  co_await forever.async_wait(asio::use_awaitable);
}

Status StatusService::on_connect(sd_bus* bus) {
  // Every member is read-only and harmless, hence UNPRIVILEGED (no CAP_SYS_ADMIN check by sd-bus):
  // the bus policy decides who may talk to the agent at all.
  static const sd_bus_vtable kVtable[] = {
      SD_BUS_VTABLE_START(SD_BUS_VTABLE_UNPRIVILEGED),
      SD_BUS_PROPERTY("Version", "s", StatusCallbacks::get_property, 0, SD_BUS_VTABLE_PROPERTY_CONST),
      SD_BUS_PROPERTY("NodeName", "s", StatusCallbacks::get_property, 0, kProperty),
      SD_BUS_PROPERTY("Ready", "b", StatusCallbacks::get_property, 0, kProperty),
      SD_BUS_PROPERTY("Drivers", "a(ssbs)", StatusCallbacks::get_property, 0, kProperty),
      SD_BUS_PROPERTY("Devices", "a(sssssss)", StatusCallbacks::get_property, 0, kProperty),
      // Named, not sent, when it changes (status_codec.hpp): its value grows with the claims.
      SD_BUS_PROPERTY("PreparedClaims", "a(sssssas)", StatusCallbacks::get_property, 0,
                      SD_BUS_VTABLE_PROPERTY_EMITS_INVALIDATION),
      SD_BUS_PROPERTY("ImexMode", "s", StatusCallbacks::get_property, 0, kProperty),
      SD_BUS_PROPERTY("ImexUnit", "s", StatusCallbacks::get_property, 0, kProperty),
      SD_BUS_PROPERTY("ImexActiveState", "s", StatusCallbacks::get_property, 0, kProperty),
      SD_BUS_PROPERTY("ImexSubState", "s", StatusCallbacks::get_property, 0, kProperty),
      SD_BUS_PROPERTY("FabricManager", "s", StatusCallbacks::get_property, 0, kProperty),
      SD_BUS_PROPERTY("FabricPartitions", "a(tasas)", StatusCallbacks::get_property, 0, kProperty),
      SD_BUS_PROPERTY("LastErrors", "a(tss)", StatusCallbacks::get_property, 0, kProperty),
      SD_BUS_SIGNAL_WITH_NAMES("DeviceHealthChanged", "sssss",
                               SD_BUS_PARAM(driver) SD_BUS_PARAM(device) SD_BUS_PARAM(health) SD_BUS_PARAM(last_xid)
                                   SD_BUS_PARAM(last_xid_time), 0),
      SD_BUS_METHOD_WITH_ARGS("GetStatusJson", SD_BUS_NO_ARGS, SD_BUS_RESULT("s", json),
                              StatusCallbacks::method_get_status_json, SD_BUS_VTABLE_UNPRIVILEGED),
      SD_BUS_METHOD_WITH_ARGS("GetClaim", SD_BUS_ARGS("s", uid), SD_BUS_RESULT("(sssssas)", claim),
                              StatusCallbacks::method_get_claim, SD_BUS_VTABLE_UNPRIVILEGED),
      SD_BUS_VTABLE_END};
  drop_slots();
  int r = sd_bus_add_object_vtable(bus, &object_slot_, kStatusObjectPath, kStatusInterface, kVtable, this);
  if (r < 0) return errno_error(r, std::string("cannot register ") + kStatusObjectPath);
  // Queue for the name: during a rolling restart the old agent still holds it for a moment.
  r = sd_bus_request_name_async(bus, &name_slot_, kStatusBusName, SD_BUS_NAME_QUEUE, StatusCallbacks::on_name_reply, this);
  if (r < 0) return errno_error(r, std::string("cannot request the name ") + kStatusBusName);
  return {};
}

int StatusCallbacks::on_name_reply(sd_bus_message* m, void* userdata, sd_bus_error*) {
  auto* self = static_cast<StatusService*>(userdata);
  auto log = nvdra::logger("dbus");
  if (const sd_bus_error* e = sd_bus_message_get_error(m)) {
    if (!self->reported_name_failure_) {
      log->error("cannot own {} on the {}: {}: {}; host tools (nvdractl) cannot reach this agent. The bus policy "
                 "{} must allow it (installed by the nvdra-agent package; the agent must run as root)",
                 kStatusBusName, self->bus_->endpoint().describe(), e->name ? e->name : "",
                 e->message ? e->message : "", "/usr/share/dbus-1/system.d/io.nvdra.Agent1.conf");
      self->reported_name_failure_ = true;
    }
    return 0;
  }
  uint32_t result = 0;
  (void)sd_bus_message_read(m, "u", &result);
  // RequestName replies: 1 primary owner, 2 queued, 3 exists, 4 already owner.
  if (result == 1 || result == 4) {
    self->owns_name_ = true;
    log->info("serving status on the {} name={} path={}", self->bus_->endpoint().describe(), kStatusBusName,
              kStatusObjectPath);
    if (self->on_owned_) self->on_owned_();
  } else {
    log->warn("{} is owned by another process; queued to take it over when it exits", kStatusBusName);
  }
  return 0;
}

void StatusService::update(StatusSnapshot snapshot) {
  if (snapshot.last_errors.size() > StatusSnapshot::kMaxErrors)
    snapshot.last_errors.erase(snapshot.last_errors.begin(),
                               snapshot.last_errors.end() - static_cast<long>(StatusSnapshot::kMaxErrors));
  auto changed = changed_properties(snapshot_, snapshot);
  const auto health = health_changes(snapshot_, snapshot);
  snapshot_ = std::move(snapshot);
  if (changed.empty() || !bus_->connected() || object_slot_ == nullptr) return;
  for (const auto& d : health) {
    const int r = sd_bus_emit_signal(bus_->raw(), kStatusObjectPath, kStatusInterface, kDeviceHealthChangedSignal,
                                     "sssss", d.driver.c_str(), d.name.c_str(), d.health.c_str(), d.last_xid.c_str(),
                                     d.last_xid_time.c_str());
    if (r < 0) nvdra::logger("dbus")->debug("DeviceHealthChanged not sent: {}, ignoring", std::strerror(-r));
  }
  changed.push_back(nullptr);
  const int r = sd_bus_emit_properties_changed_strv(bus_->raw(), kStatusObjectPath, kStatusInterface,
                                                    const_cast<char**>(changed.data()));
  if (r < 0) nvdra::logger("dbus")->debug("PropertiesChanged not sent: {}, ignoring", std::strerror(-r));
}

int StatusCallbacks::get_property(sd_bus*, const char*, const char*, const char* property, sd_bus_message* reply,
                                void* userdata, sd_bus_error*) {
  return append_property(reply, static_cast<StatusService*>(userdata)->snapshot_, property);
}

int StatusCallbacks::method_get_status_json(sd_bus_message* m, void* userdata, sd_bus_error*) {
  const auto text = boost::json::serialize(to_json(static_cast<StatusService*>(userdata)->snapshot_));
  return sd_bus_reply_method_return(m, "s", text.c_str());
}

int StatusCallbacks::method_get_claim(sd_bus_message* m, void* userdata, sd_bus_error* error) {
  const char* uid = nullptr;
  if (int r = sd_bus_message_read(m, "s", &uid); r < 0) return r;
  for (const auto& claim : static_cast<StatusService*>(userdata)->snapshot_.claims) {
    if (claim.uid != uid) continue;
    sd_bus_message* reply = nullptr;
    int r = sd_bus_message_new_method_return(m, &reply);
    if (r >= 0) r = append_claim(reply, claim);
    if (r >= 0) r = sd_bus_send(nullptr, reply, nullptr);
    sd_bus_message_unref(reply);
    return r;
  }
  return sd_bus_error_setf(error, kStatusNotFoundError, "no prepared claim with uid \"%s\" on this node", uid);
}

}  // namespace nvdra::systemd_bus
