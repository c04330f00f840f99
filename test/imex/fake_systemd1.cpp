// fake_systemd1 — a stand-in for systemd's org.freedesktop.systemd1 on a test's private
// dbus-daemon (DBUS_SYSTEM_BUS_ADDRESS). It serves what the IMEX unit watcher uses — Manager
// GetUnit/LoadUnit/Subscribe and the unit objects' LoadState/ActiveState/SubState with
// PropertiesChanged signals — and counts StartUnit/StopUnit/RestartUnit calls so tests can show
// the agent never makes them. The test drives it over stdin, one command a line, each answered
// by one line on stdout once done:
//   set <unit> <LoadState> <ActiveState> <SubState>   → "ok"  (emits PropertiesChanged when known)
//   calls                                              → "<n>" (unit lifecycle calls received)
//   subscribers                                        → "<n>" (Subscribe calls received)
// It prints "ready" once it owns the name. Units not set answer GetUnit with NoSuchUnit, and
// LoadUnit makes them "not-found inactive dead", as systemd does.
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <sstream>
#include <string>

namespace {

struct Unit {
  std::string name, path, load = "not-found", active = "inactive", sub = "dead";
  sd_bus_slot* slot = nullptr;
};

struct Fake {
  sd_bus* bus = nullptr;
  std::map<std::string, std::unique_ptr<Unit>> units;  // by name
  unsigned lifecycle_calls = 0, subscribes = 0;
  std::string input;
};

Fake g;

std::string path_of(const std::string& name) {
  char* p = nullptr;
  sd_bus_path_encode("/org/freedesktop/systemd1/unit", name.c_str(), &p);
  std::string out = p ? p : "";
  std::free(p);
  return out;
}

int get_prop(sd_bus*, const char*, const char*, const char* property, sd_bus_message* reply, void* userdata,
             sd_bus_error*) {
  auto* u = static_cast<Unit*>(userdata);
  const std::string p = property;
  const std::string& v = p == "LoadState" ? u->load : p == "ActiveState" ? u->active : p == "SubState" ? u->sub : u->name;
  return sd_bus_message_append(reply, "s", v.c_str());
}

const sd_bus_vtable kUnitVtable[] = {
    SD_BUS_VTABLE_START(0),
    SD_BUS_PROPERTY("Id", "s", get_prop, 0, SD_BUS_VTABLE_PROPERTY_CONST),
    SD_BUS_PROPERTY("LoadState", "s", get_prop, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
    SD_BUS_PROPERTY("ActiveState", "s", get_prop, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
    SD_BUS_PROPERTY("SubState", "s", get_prop, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
    SD_BUS_VTABLE_END};

Unit* ensure(const std::string& name) {
  auto& u = g.units[name];
  if (!u) {
    u = std::make_unique<Unit>();
    u->name = name;
    u->path = path_of(name);
    sd_bus_add_object_vtable(g.bus, &u->slot, u->path.c_str(), "org.freedesktop.systemd1.Unit", kUnitVtable, u.get());
  }
  return u.get();
}

int get_unit(sd_bus_message* m, void*, sd_bus_error* error) {
  const char* name = nullptr;
  if (int r = sd_bus_message_read(m, "s", &name); r < 0) return r;
  auto it = g.units.find(name);
  if (it == g.units.end())
    return sd_bus_error_setf(error, "org.freedesktop.systemd1.NoSuchUnit", "Unit %s not loaded.", name);
  return sd_bus_reply_method_return(m, "o", it->second->path.c_str());
}

int load_unit(sd_bus_message* m, void*, sd_bus_error*) {
  const char* name = nullptr;
  if (int r = sd_bus_message_read(m, "s", &name); r < 0) return r;
  return sd_bus_reply_method_return(m, "o", ensure(name)->path.c_str());
}

int subscribe(sd_bus_message* m, void*, sd_bus_error*) {
  ++g.subscribes;
  return sd_bus_reply_method_return(m, "");
}

int lifecycle(sd_bus_message* m, void*, sd_bus_error*) {
  ++g.lifecycle_calls;
  return sd_bus_reply_method_return(m, "o", "/org/freedesktop/systemd1/job/1");
}

const sd_bus_vtable kManagerVtable[] = {
    SD_BUS_VTABLE_START(0),
    SD_BUS_METHOD("GetUnit", "s", "o", get_unit, SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_METHOD("LoadUnit", "s", "o", load_unit, SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_METHOD("Subscribe", "", "", subscribe, SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_METHOD("StartUnit", "ss", "o", lifecycle, SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_METHOD("StopUnit", "ss", "o", lifecycle, SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_METHOD("RestartUnit", "ss", "o", lifecycle, SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_VTABLE_END};

void reply(const std::string& line) {
  std::fputs((line + "\n").c_str(), stdout);
  std::fflush(stdout);
}

void command(const std::string& line) {
  std::istringstream in(line);
  std::string verb;
  in >> verb;
  if (verb == "set") {
    std::string name, load, active, sub;
    in >> name >> load >> active >> sub;
    Unit* u = ensure(name);
    u->load = load;
    u->active = active;
    u->sub = sub;
    sd_bus_emit_properties_changed(g.bus, u->path.c_str(), "org.freedesktop.systemd1.Unit", "LoadState",
                                   "ActiveState", "SubState", nullptr);
    sd_bus_flush(g.bus);
    reply("ok");
  } else if (verb == "calls") {
    reply(std::to_string(g.lifecycle_calls));
  } else if (verb == "subscribers") {
    reply(std::to_string(g.subscribes));
  } else if (!verb.empty()) {
    reply("unknown command " + verb);
  }
}

int on_stdin(sd_event_source* s, int fd, uint32_t, void*) {
  char buf[512];
  const ssize_t n = ::read(fd, buf, sizeof buf);
  if (n <= 0) return sd_event_exit(sd_event_source_get_event(s), 0);  // the test went away
  g.input.append(buf, static_cast<size_t>(n));
  for (size_t nl; (nl = g.input.find('\n')) != std::string::npos;) {
    command(g.input.substr(0, nl));
    g.input.erase(0, nl + 1);
  }
  return 0;
}

}  // namespace

int main() {
  sd_event* event = nullptr;
  if (sd_event_default(&event) < 0 || sd_bus_open_system(&g.bus) < 0) {
    std::fprintf(stderr, "fake_systemd1: cannot connect to the bus\n");
    return 1;
  }
  sd_bus_add_object_vtable(g.bus, nullptr, "/org/freedesktop/systemd1", "org.freedesktop.systemd1.Manager",
                           kManagerVtable, nullptr);
  if (int r = sd_bus_request_name(g.bus, "org.freedesktop.systemd1", 0); r < 0) {
    std::fprintf(stderr, "fake_systemd1: cannot own org.freedesktop.systemd1: %s\n", std::strerror(-r));
    return 1;
  }
  sd_bus_attach_event(g.bus, event, 0);
  sd_event_add_io(event, nullptr, STDIN_FILENO, EPOLLIN, on_stdin, nullptr);
  reply("ready");
  const int r = sd_event_loop(event);
  sd_bus_flush_close_unref(g.bus);
  sd_event_unref(event);
  return r < 0 ? 1 : 0;
}
