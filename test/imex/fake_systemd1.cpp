// fake_systemd1 — a stand-in for systemd's org.freedesktop.systemd1 on a test's private
// dbus-daemon (DBUS_SYSTEM_BUS_ADDRESS). It serves what the IMEX unit watcher uses — Manager
// GetUnit/LoadUnit/Subscribe and the unit objects' LoadState/ActiveState/SubState with
// PropertiesChanged signals — and counts StartUnit/StopUnit/RestartUnit calls so tests can show
// the agent never makes them. For the MPS control daemons it also runs transient units:
// StartTransientUnit records the unit's properties (ExecStart argv, Environment, the rest as
// strings), runs ExecStart with that environment and waits for it to exit, as Type=forking does
// (exit 0: active/running and JobRemoved "done"; else JobRemoved "failed" and the unit is gone, as
// CollectMode=inactive-or-failed makes it); StopUnit of a transient unit deactivates and forgets it
// with JobRemoved "done"; StopUnit of an unknown unit answers NoSuchUnit. The test drives it over
// stdin, one command a line, each answered by one line on stdout once done:
//   set <unit> <LoadState> <ActiveState> <SubState>   → "ok"  (emits PropertiesChanged when known)
//   calls                                              → "<n>" (unit lifecycle calls received)
//   subscribers                                        → "<n>" (Subscribe calls received)
//   transient                                          → one line of JSON: {"starts": n (successful
//       StartTransientUnit calls), "stopped": [unit, …], "units": {unit: {"active", "sub", "path",
//       "argv", "env", "properties"}}} for the transient units loaded now
// It prints "ready" once it owns the name. Units not set answer GetUnit with NoSuchUnit, and
// LoadUnit makes them "not-found inactive dead", as systemd does.
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/json.hpp>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct Unit {
  std::string name, path, load = "not-found", active = "inactive", sub = "dead";
  sd_bus_slot* slot = nullptr;
  ~Unit() { sd_bus_slot_unref(slot); }
  // Transient units only.
  bool transient = false;
  std::string exec_path;
  std::vector<std::string> argv, env;
  std::map<std::string, std::string> properties;  // the other properties' values as strings
};

struct Fake {
  sd_bus* bus = nullptr;
  std::map<std::string, std::unique_ptr<Unit>> units;  // by name
  unsigned lifecycle_calls = 0, subscribes = 0, transient_starts = 0, jobs = 100;
  std::vector<std::string> stopped;
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

void set_state(Unit* u, const std::string& load, const std::string& active, const std::string& sub) {
  u->load = load;
  u->active = active;
  u->sub = sub;
  sd_bus_emit_properties_changed(g.bus, u->path.c_str(), "org.freedesktop.systemd1.Unit", "LoadState",
                                 "ActiveState", "SubState", nullptr);
}

std::vector<std::string> take_strv(char** strv) {
  std::vector<std::string> out;
  for (char** p = strv; p && *p; ++p) {
    out.emplace_back(*p);
    std::free(*p);
  }
  std::free(strv);
  return out;
}

// ExecStart a(sasb): the first command's path and argv.
int read_exec_start(sd_bus_message* m, Unit& u) {
  int r = sd_bus_message_enter_container(m, 'v', "a(sasb)");
  if (r >= 0) r = sd_bus_message_enter_container(m, 'a', "(sasb)");
  while (r >= 0 && (r = sd_bus_message_enter_container(m, 'r', "sasb")) > 0) {
    const char* path = nullptr;
    char** argv = nullptr;
    int ignore = 0;
    if ((r = sd_bus_message_read(m, "s", &path)) < 0 || (r = sd_bus_message_read_strv(m, &argv)) < 0 ||
        (r = sd_bus_message_read(m, "b", &ignore)) < 0)
      return r;
    if (u.exec_path.empty()) {
      u.exec_path = path;
      u.argv = take_strv(argv);
    } else {
      take_strv(argv);
    }
    r = sd_bus_message_exit_container(m);
  }
  if (r >= 0) r = sd_bus_message_exit_container(m);
  if (r >= 0) r = sd_bus_message_exit_container(m);
  return r;
}

// a(sv): ExecStart and Environment in full, s/t/b values as strings, anything else skipped.
int read_properties(sd_bus_message* m, Unit& u) {
  int r = sd_bus_message_enter_container(m, 'a', "(sv)");
  while (r >= 0 && (r = sd_bus_message_enter_container(m, 'r', "sv")) > 0) {
    const char* key = nullptr;
    const char* sig = nullptr;
    if ((r = sd_bus_message_read(m, "s", &key)) < 0 || (r = sd_bus_message_peek_type(m, nullptr, &sig)) < 0) return r;
    const std::string k = key, type = sig ? sig : "";
    if (k == "ExecStart" && type == "a(sasb)") {
      r = read_exec_start(m, u);
    } else if (k == "Environment" && type == "as") {
      char** env = nullptr;
      if ((r = sd_bus_message_enter_container(m, 'v', "as")) >= 0 && (r = sd_bus_message_read_strv(m, &env)) >= 0)
        r = sd_bus_message_exit_container(m);
      u.env = take_strv(env);
    } else if (type == "s") {
      const char* v = nullptr;
      r = sd_bus_message_read(m, "v", "s", &v);
      if (r >= 0) u.properties[k] = v;
    } else if (type == "t") {
      uint64_t v = 0;
      r = sd_bus_message_read(m, "v", "t", &v);
      if (r >= 0) u.properties[k] = std::to_string(v);
    } else if (type == "b") {
      int v = 0;
      r = sd_bus_message_read(m, "v", "b", &v);
      if (r >= 0) u.properties[k] = v ? "true" : "false";
    } else {
      r = sd_bus_message_skip(m, "v");
    }
    if (r >= 0) r = sd_bus_message_exit_container(m);
  }
  if (r >= 0) r = sd_bus_message_exit_container(m);
  return r;
}

// Runs ExecStart as systemd would for Type=forking: its own environment only (plus PATH), stdin
// and stdout on /dev/null (stdout is the test's answer pipe), done when the started process exits.
int run_exec_start(const Unit& u) {
  if (u.exec_path.empty()) return -1;
  const pid_t pid = ::fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    const int null = ::open("/dev/null", O_RDWR);
    ::dup2(null, 0);
    ::dup2(null, 1);
    std::vector<std::string> env = u.env;
    env.emplace_back("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
    std::vector<char*> argv, envp;
    for (const auto& a : u.argv) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
    envp.push_back(nullptr);
    ::execve(u.exec_path.c_str(), argv.data(), envp.data());
    ::_exit(127);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string next_job() { return "/org/freedesktop/systemd1/job/" + std::to_string(++g.jobs); }

void job_removed(const std::string& job, const std::string& unit, const char* result) {
  sd_bus_emit_signal(g.bus, "/org/freedesktop/systemd1", "org.freedesktop.systemd1.Manager", "JobRemoved", "uoss",
                     g.jobs, job.c_str(), unit.c_str(), result);
  sd_bus_flush(g.bus);
}

int start_transient(sd_bus_message* m, void*, sd_bus_error* error) {
  const char *name = nullptr, *mode = nullptr;
  if (int r = sd_bus_message_read(m, "ss", &name, &mode); r < 0) return r;
  const std::string unit = name;
  if (auto it = g.units.find(unit); it != g.units.end() && it->second->load != "not-found")
    return sd_bus_error_setf(error, "org.freedesktop.systemd1.UnitExists",
                             "Unit %s was already loaded or has a fragment file.", name);
  Unit parsed;
  if (int r = read_properties(m, parsed); r < 0) return r;
  Unit* u = ensure(unit);
  u->transient = true;
  u->exec_path = parsed.exec_path;
  u->argv = parsed.argv;
  u->env = parsed.env;
  u->properties = parsed.properties;
  set_state(u, "loaded", "activating", "start");
  const std::string job = next_job();
  if (int r = sd_bus_reply_method_return(m, "o", job.c_str()); r < 0) return r;
  if (run_exec_start(*u) == 0) {
    ++g.transient_starts;
    set_state(u, "loaded", "active", "running");
    job_removed(job, unit, "done");
  } else {
    set_state(u, "loaded", "failed", "failed");
    g.units.erase(unit);  // CollectMode=inactive-or-failed
    job_removed(job, unit, "failed");
  }
  return 1;
}

int stop_unit(sd_bus_message* m, void*, sd_bus_error* error) {
  ++g.lifecycle_calls;
  const char *name = nullptr, *mode = nullptr;
  if (int r = sd_bus_message_read(m, "ss", &name, &mode); r < 0) return r;
  const std::string unit = name;
  auto it = g.units.find(unit);
  if (it == g.units.end())
    return sd_bus_error_setf(error, "org.freedesktop.systemd1.NoSuchUnit", "Unit %s not loaded.", name);
  if (!it->second->transient) return sd_bus_reply_method_return(m, "o", "/org/freedesktop/systemd1/job/1");
  const std::string job = next_job();
  if (int r = sd_bus_reply_method_return(m, "o", job.c_str()); r < 0) return r;
  set_state(it->second.get(), "loaded", "inactive", "dead");
  g.units.erase(it);
  g.stopped.push_back(unit);
  job_removed(job, unit, "done");
  return 1;
}

std::string transient_json() {
  boost::json::object units;
  for (const auto& [name, u] : g.units) {
    if (!u->transient) continue;
    boost::json::object props;
    for (const auto& [k, v] : u->properties) props[k] = v;
    units[name] = boost::json::object{{"active", u->active}, {"sub", u->sub}, {"path", u->exec_path},
                   {"argv", boost::json::value_from(u->argv)}, {"env", boost::json::value_from(u->env)},
                   {"properties", props}};
  }
  return boost::json::serialize(boost::json::object{
      {"starts", g.transient_starts}, {"stopped", boost::json::value_from(g.stopped)}, {"units", units}});
}

const sd_bus_vtable kManagerVtable[] = {
    SD_BUS_VTABLE_START(0),
    SD_BUS_METHOD("GetUnit", "s", "o", get_unit, SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_METHOD("LoadUnit", "s", "o", load_unit, SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_METHOD("Subscribe", "", "", subscribe, SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_METHOD("StartUnit", "ss", "o", lifecycle, SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_METHOD("StopUnit", "ss", "o", stop_unit, SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_METHOD("StartTransientUnit", "ssa(sv)a(sa(sv))", "o", start_transient, SD_BUS_VTABLE_UNPRIVILEGED),
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
    set_state(ensure(name), load, active, sub);
    sd_bus_flush(g.bus);
    reply("ok");
  } else if (verb == "calls") {
    reply(std::to_string(g.lifecycle_calls));
  } else if (verb == "subscribers") {
    reply(std::to_string(g.subscribes));
  } else if (verb == "transient") {
    reply(transient_json());
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
