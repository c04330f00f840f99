#include "agent/claims/sharing/mps_systemd_unit.hpp"

#include <systemd/sd-bus.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <vector>

#include "agent/base/crash_point.hpp"
#include "agent/systemd_bus/bus_message.hpp"
#include "agent/systemd_bus/systemd1_names.hpp"

namespace nvdra::claims {
namespace {

using namespace systemd_bus::systemd1;  // kService, kManagerPath, kManager, kUnit, kNoSuchUnit

uint64_t usec(std::chrono::milliseconds d) { return static_cast<uint64_t>(d.count()) * 1000; }

struct BusError {
  sd_bus_error e = SD_BUS_ERROR_NULL;
  BusError() = default;
  BusError(const BusError&) = delete;
  BusError& operator=(const BusError&) = delete;
  ~BusError() { sd_bus_error_free(&e); }
  bool is(const char* name) const { return sd_bus_error_has_name(&e, name); }
};

// One system-bus connection for one start or stop. The manager's JobRemoved signals are matched
// before any job is asked for, so a job that ends before its call's reply arrives is seen too.
class Session {
 public:
  Session(std::string unit, std::chrono::milliseconds timeout) : unit_(std::move(unit)), timeout_(timeout) {}
  ~Session() {
    sd_bus_slot_unref(match_);
    sd_bus_flush_close_unref(bus_);
  }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  Status open() {
    if (int r = sd_bus_open_system(&bus_); r < 0)
      return make_error(ErrorCode::kUnavailable,
                        "MPS unit " + unit_ + ": cannot connect to the system bus: " + std::strerror(-r));
    sd_bus_set_method_call_timeout(bus_, usec(timeout_));
    if (int r = sd_bus_match_signal(bus_, &match_, kService, kManagerPath, kManager, "JobRemoved", on_job_removed,
                                    this);
        r < 0)
      return failure("matching JobRemoved", r, nullptr);
    // systemd sends job signals only to subscribed clients; closing the connection unsubscribes.
    BusError err;
    if (int r = sd_bus_call_method(bus_, kService, kManagerPath, kManager, "Subscribe", &err.e, nullptr, ""); r < 0)
      return failure("Subscribe", r, &err);
    return {};
  }

  // The unit's ActiveState, or "" when systemd does not have it loaded.
  Result<std::string> active_state() {
    BusError err;
    sd_bus_message* reply = nullptr;
    int r = sd_bus_call_method(bus_, kService, kManagerPath, kManager, "GetUnit", &err.e, &reply, "s", unit_.c_str());
    if (r < 0) return err.is(kNoSuchUnit) ? Result<std::string>(std::string()) : failure("GetUnit", r, &err);
    const char* path = nullptr;
    r = sd_bus_message_read(reply, "o", &path);
    const std::string unit_path = r >= 0 ? path : "";
    sd_bus_message_unref(reply);
    if (r < 0) return failure("reading GetUnit's answer", r, nullptr);
    char* state = nullptr;
    r = sd_bus_get_property_string(bus_, kService, unit_path.c_str(), kUnit, "ActiveState", &err.e, &state);
    if (r < 0) return err.is(kNoSuchUnit) ? Result<std::string>(std::string()) : failure("reading ActiveState", r, &err);
    std::string out = state;
    std::free(state);
    return out;
  }

  // Sends `call`, which answers with a job path. kNotFound when systemd does not know the unit.
  Result<std::string> call_job(sd_bus_message* call, const char* what) {
    BusError err;
    sd_bus_message* reply = nullptr;
    int r = sd_bus_call(bus_, call, 0, &err.e, &reply);
    if (r < 0) {
      if (err.is(kNoSuchUnit)) return make_error(ErrorCode::kNotFound, "MPS unit " + unit_ + " is not loaded");
      return failure(what, r, &err);
    }
    const char* job = nullptr;
    r = sd_bus_message_read(reply, "o", &job);
    std::string out = r >= 0 ? job : "";
    sd_bus_message_unref(reply);
    if (r < 0) return failure(what, r, nullptr);
    return out;
  }

  // Waits for the job's JobRemoved and returns its result: done, failed, timeout, canceled, …
  Result<std::string> wait_job(const std::string& job, const char* what) {
    const auto deadline = std::chrono::steady_clock::now() + timeout_;
    for (;;) {
      if (auto it = finished_.find(job); it != finished_.end()) return it->second;
      int r = sd_bus_process(bus_, nullptr);
      if (r < 0) return failure(what, r, nullptr);
      if (r > 0) continue;
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0)
        return make_error(ErrorCode::kUnavailable, "MPS unit " + unit_ + ": " + what + " job " + job +
                                                       " did not finish within " + std::to_string(timeout_.count()) +
                                                       " ms (see systemctl status " + unit_ + ")");
      if (r = sd_bus_wait(bus_, usec(left)); r < 0) return failure(what, r, nullptr);
    }
  }

  // A new call of one of the manager's methods; the caller appends its arguments.
  Result<systemd_bus::Message> manager_call(const char* member) {
    sd_bus_message* m = nullptr;
    if (int r = sd_bus_message_new_method_call(bus_, &m, kService, kManagerPath, kManager, member); r < 0)
      return failure(std::string("building ") + member, r, nullptr);
    return systemd_bus::Message::adopt(m);
  }

  Error failure(const std::string& what, int r, const BusError* err) const {
    std::string why = std::strerror(-r);
    if (err && sd_bus_error_is_set(&err->e))
      why = std::string(err->e.name) + ": " + (err->e.message ? err->e.message : "");
    const bool denied = err && (err->is(SD_BUS_ERROR_ACCESS_DENIED) ||
                                err->is("org.freedesktop.DBus.Error.InteractiveAuthorizationRequired"));
    return make_error(denied ? ErrorCode::kPermissionDenied : ErrorCode::kUnavailable,
                      "MPS unit " + unit_ + ": " + what + " failed: " + why);
  }

 private:
  // JobRemoved(u id, o job, s unit, s result).
  static int on_job_removed(sd_bus_message* m, void* self, sd_bus_error*) {
    uint32_t id = 0;
    const char *job = nullptr, *unit = nullptr, *result = nullptr;
    if (sd_bus_message_read(m, "uoss", &id, &job, &unit, &result) >= 0)
      static_cast<Session*>(self)->finished_[job] = result;
    return 0;
  }

  std::string unit_;
  std::chrono::milliseconds timeout_;
  sd_bus* bus_ = nullptr;
  sd_bus_slot* match_ = nullptr;
  std::map<std::string, std::string> finished_;  // job path → result
};

// StartTransientUnit(s name, s mode, a(sv) properties, a(sa(sv)) aux). Only what the daemon needs:
// it runs in system.slice like any service, as root, with systemd's clean environment.
int append_start(sd_bus_message* m, const std::string& unit, const std::string& control, const MpsDaemon& daemon,
                 std::chrono::milliseconds job_timeout) {
  std::vector<std::string> argv{"nvidia-cuda-mps-control"};
  for (auto& flag : mps_daemon_flags(daemon)) argv.push_back(std::move(flag));
  const auto env = mps_daemon_env(daemon);
  const std::string description = "nvdra MPS control daemon " + daemon.id;
  // A daemon that ignores SIGTERM is killed well within the agent's wait for the stop job.
  const uint64_t stop_timeout = usec(job_timeout) / 3;
  int r = sd_bus_message_append(m, "ss", unit.c_str(), "fail");
  if (r >= 0) r = sd_bus_message_open_container(m, 'a', "(sv)");
  // `-d` forks the daemon and exits: the start job is done once it is up.
  if (r >= 0)
    r = sd_bus_message_append(m, "(sv)(sv)(sv)(sv)", "Description", "s", description.c_str(), "Type", "s",
                              "forking", "CollectMode", "s", "inactive-or-failed", "TimeoutStopUSec", "t", stop_timeout);
  if (r >= 0) r = sd_bus_message_open_container(m, 'r', "sv");
  if (r >= 0) r = sd_bus_message_append(m, "s", "Environment");
  if (r >= 0) r = sd_bus_message_open_container(m, 'v', "as");
  if (r >= 0) {
    std::vector<const char*> strv;
    for (const auto& e : env) strv.push_back(e.c_str());
    strv.push_back(nullptr);
    r = sd_bus_message_append_strv(m, const_cast<char**>(strv.data()));
  }
  if (r >= 0) r = sd_bus_message_close_container(m);
  if (r >= 0) r = sd_bus_message_close_container(m);
  // ExecStart a(sasb): path, argv, ignore-failure.
  if (r >= 0) r = sd_bus_message_open_container(m, 'r', "sv");
  if (r >= 0) r = sd_bus_message_append(m, "s", "ExecStart");
  if (r >= 0) r = sd_bus_message_open_container(m, 'v', "a(sasb)");
  if (r >= 0) r = sd_bus_message_open_container(m, 'a', "(sasb)");
  if (r >= 0) r = sd_bus_message_open_container(m, 'r', "sasb");
  if (r >= 0) r = sd_bus_message_append(m, "s", control.c_str());
  if (r >= 0) {
    std::vector<const char*> strv;
    for (const auto& a : argv) strv.push_back(a.c_str());
    strv.push_back(nullptr);
    r = sd_bus_message_append_strv(m, const_cast<char**>(strv.data()));
  }
  if (r >= 0) r = sd_bus_message_append(m, "b", 0);
  for (int i = 0; i < 4 && r >= 0; ++i) r = sd_bus_message_close_container(m);
  if (r >= 0) r = sd_bus_message_close_container(m);  // properties
  if (r >= 0) r = sd_bus_message_append(m, "a(sa(sv))", 0);
  return r;
}

}  // namespace

std::string SystemdMpsControl::unit_name(const MpsDaemon& daemon) { return "nvdra-mps-" + daemon.id + ".service"; }

Status SystemdMpsControl::start(const MpsDaemon& daemon) {
  auto control = locate_mps_control(driver_root_);
  if (!control) return control.error();
  if (auto st = create_mps_dirs(daemon); !st) return st;
  const std::string unit = unit_name(daemon);
  Session s(unit, job_timeout_);
  if (auto st = s.open(); !st) return st;
  auto state = s.active_state();
  if (!state) return state.error();
  if (*state == "active") return {};
  if (!state->empty())
    return make_error(ErrorCode::kUnavailable, "MPS unit " + unit + " is " + *state +
                                                   ", not active: it can be started once systemd is done with it "
                                                   "(systemctl status " + unit + ")");
  auto call = s.manager_call("StartTransientUnit");
  if (!call) return call.error();
  if (int r = append_start(call->get(), unit, *control, daemon, job_timeout_); r < 0)
    return s.failure("building StartTransientUnit", r, nullptr);
  auto job = s.call_job(call->get(), "StartTransientUnit");
  if (!job) return job.error();
  auto result = s.wait_job(*job, "start");
  if (!result) return result.error();
  if (*result != "done")
    return make_error(ErrorCode::kUnavailable, "MPS unit " + unit + " did not start: job result \"" + *result +
                                                   "\" (see journalctl -u " + unit + " and " + daemon.log_dir() + ")");
  crash_point("mps-systemd.prepare.after-daemon-start");  // the unit runs, its limits not yet set
  return apply_mps_limits(*control, daemon);
}

Status SystemdMpsControl::stop(const MpsDaemon& daemon) {
  const std::string unit = unit_name(daemon);
  Session s(unit, job_timeout_);
  if (auto st = s.open(); !st) return st;
  auto call = s.manager_call("StopUnit");
  if (!call) return call.error();
  if (int r = sd_bus_message_append(call->get(), "ss", unit.c_str(), "replace"); r < 0)
    return s.failure("building StopUnit", r, nullptr);
  auto job = s.call_job(call->get(), "StopUnit");
  if (!job && job.error().code != ErrorCode::kNotFound) return job.error();
  if (job) {
    auto result = s.wait_job(*job, "stop");
    if (!result) return result.error();
    if (*result != "done")
      return make_error(ErrorCode::kUnavailable, "MPS unit " + unit + " did not stop: job result \"" + *result +
                                                     "\" (see journalctl -u " + unit + ")");
  }
  return remove_mps_dirs(daemon);
}

}  // namespace nvdra::claims
