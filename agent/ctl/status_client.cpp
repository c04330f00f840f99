#include "agent/ctl/status_client.hpp"

#include <systemd/sd-bus.h>

#include <cstring>
#include <memory>

#include "agent/systemd_bus/bus_message.hpp"
#include "agent/systemd_bus/status_codec.hpp"

namespace nvdra::ctl {
namespace {

using BusPtr = std::unique_ptr<sd_bus, decltype(&sd_bus_flush_close_unref)>;

std::string bus_name(const ClientOptions& o) {
  if (!o.address.empty()) return "bus " + o.address;
  const char* env = std::getenv("DBUS_SYSTEM_BUS_ADDRESS");
  return std::string("system bus (") + (env && *env ? env : "unix:path=/run/dbus/system_bus_socket") + ")";
}

Result<BusPtr> connect(const ClientOptions& o) {
  sd_bus* raw = nullptr;
  int r = 0;
  if (o.address.empty()) {
    r = sd_bus_open_system(&raw);
  } else {
    r = sd_bus_new(&raw);
    if (r >= 0) r = sd_bus_set_address(raw, o.address.c_str());
    if (r >= 0) r = sd_bus_set_bus_client(raw, 1);
    if (r >= 0) r = sd_bus_start(raw);
  }
  BusPtr bus(raw, &sd_bus_flush_close_unref);
  if (r < 0)
    return make_error(ErrorCode::kUnavailable, "cannot connect to the " + bus_name(o) + ": " + std::strerror(-r) +
                                                   "; is dbus running?");
  return bus;
}

Error classify(const sd_bus_error& e, int r, const ClientOptions& o) {
  const std::string name = e.name ? e.name : "";
  const std::string text = e.message ? e.message : std::strerror(-r);
  if (name == SD_BUS_ERROR_SERVICE_UNKNOWN || name == SD_BUS_ERROR_NAME_HAS_NO_OWNER)
    return make_error(ErrorCode::kUnavailable,
                      std::string("the nvdra agent is not running: nobody owns ") + systemd_bus::kStatusBusName +
                          " on the " + bus_name(o) + " (start it with: systemctl start nvdra-agent)");
  if (name == SD_BUS_ERROR_ACCESS_DENIED || r == -EACCES || r == -EPERM)
    return make_error(ErrorCode::kPermissionDenied,
                      std::string("access denied to ") + systemd_bus::kStatusBusName + " on the " + bus_name(o) +
                          ": run nvdractl as root or as a member of the agent's group (default \"nvdra\"): " + text);
  if (name == SD_BUS_ERROR_NO_REPLY || name == SD_BUS_ERROR_TIMEOUT || r == -ETIMEDOUT)
    return make_error(ErrorCode::kUnavailable, std::string("the nvdra agent did not answer in time on the ") +
                                                   bus_name(o) + ": " + text);
  return make_error(ErrorCode::kInternal, std::string("GetAll on ") + systemd_bus::kStatusBusName + ": " +
                                              (name.empty() ? "" : name + ": ") + text);
}

}  // namespace

Result<systemd_bus::StatusSnapshot> fetch_status(const ClientOptions& o) {
  auto bus = connect(o);
  if (!bus) return bus.error();
  sd_bus_error error = SD_BUS_ERROR_NULL;
  sd_bus_message* request = nullptr;
  int r = sd_bus_message_new_method_call(bus->get(), &request, systemd_bus::kStatusBusName,
                                         systemd_bus::kStatusObjectPath, "org.freedesktop.DBus.Properties", "GetAll");
  auto owned_request = systemd_bus::Message::adopt(request);
  if (r >= 0) r = sd_bus_message_append(request, "s", systemd_bus::kStatusInterface);
  // Never start the service through bus activation, and never prompt for a password.
  if (r >= 0) r = sd_bus_message_set_auto_start(request, 0);
  sd_bus_message* reply = nullptr;
  if (r >= 0) r = sd_bus_call(bus->get(), request, static_cast<uint64_t>(o.timeout_ms) * 1000, &error, &reply);
  auto owned_reply = systemd_bus::Message::adopt(reply);
  if (r < 0) {
    auto e = r == -ECONNRESET || r == -ENOTCONN
                 ? make_error(ErrorCode::kUnavailable, "the " + bus_name(o) + " closed the connection: " +
                                                           std::strerror(-r) + " (is nvdractl allowed to connect?)")
                 : classify(error, r, o);
    sd_bus_error_free(&error);
    return e;
  }
  systemd_bus::StatusSnapshot snapshot;
  if (auto st = systemd_bus::decode_properties(owned_reply, snapshot); !st)
    return make_error(ErrorCode::kInternal, std::string("unexpected reply from ") + systemd_bus::kStatusBusName +
                                                ": " + st.error().message);
  return snapshot;
}

}  // namespace nvdra::ctl
