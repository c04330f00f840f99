#include "agent/drivers/imex_unit_watcher.hpp"

#include <systemd/sd-bus.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>

#include <cstdlib>
#include <vector>

#include "agent/base/log.hpp"
#include "agent/systemd_bus/bus_connection.hpp"
#include "agent/systemd_bus/systemd1_names.hpp"

namespace asio = boost::asio;

namespace nvdra::drivers {

namespace {
using namespace systemd_bus::systemd1;  // kService, kManagerPath, kManager, kUnit, kNoSuchUnit

bool no_such_unit(const Error& e) { return e.message.find(kNoSuchUnit) != std::string::npos; }
bool no_systemd(const Error& e) {
  return e.message.find("org.freedesktop.DBus.Error.ServiceUnknown") != std::string::npos ||
         e.message.find("org.freedesktop.DBus.Error.NameHasNoOwner") != std::string::npos;
}
}  // namespace

struct ImexUnitWatcher::State : std::enable_shared_from_this<State> {
  State(systemd_bus::BusConnection& b, std::string u) : bus(b), log(nvdra::logger("imex")) {
    view.unit = std::move(u);
  }

  systemd_bus::BusConnection& bus;
  std::shared_ptr<spdlog::logger> log;
  imex::UnitView view;
  std::vector<Listener> listeners;
  std::string path;
  systemd_bus::BusConnection::Subscription hook, owner_match, props_match;
  bool attached = false;  // false once the watcher is gone: no more bus access
  bool reading = false, again = false;
  bool reported_absent = false;
  std::string last_problem;
  uint64_t reads = 0;

  void detach() {
    attached = false;
    hook.reset();
    owner_match.reset();
    props_match.reset();
  }

  void publish(imex::UnitView next) {
    if (next == view) return;
    const imex::UnitView before = view;
    view = std::move(next);
    if (view.reach == imex::Reach::kKnown) {
      reported_absent = false;
      last_problem.clear();
      const std::string was = before.reach == imex::Reach::kKnown ? imex::describe(before.state) : "unknown";
      if (imex::is_active(view.state))
        log->info("imex unit={} {} (was {})", view.unit, imex::describe(view.state), was);
      else
        log->warn("imex unit={} {} (was {}): the host's IMEX daemon is not active; the agent does not start it",
                  view.unit, imex::describe(view.state), was);
    } else if (view.reach == imex::Reach::kNoSystemd) {
      if (!reported_absent)
        log->warn("imex unit={} state unknown: {}; IMEX unit checks are off until systemd answers", view.unit,
                  view.problem);
      reported_absent = true;
    }
    for (auto& l : listeners) l(view);
  }

  void set_props_match(const std::string& p) {
    if (p == path && attached) return;
    path = p;
    const std::string rule = "type='signal',sender='" + std::string(kService) + "',path='" + path +
                             "',interface='org.freedesktop.DBus.Properties',member='PropertiesChanged'";
    std::weak_ptr<State> weak = shared_from_this();
    props_match = bus.add_match(rule, [weak](systemd_bus::Message& m) {
      if (auto s = weak.lock(); s && s->attached) s->on_properties(m);
    });
  }

  // PropertiesChanged(s interface, a{sv} changed, as invalidated): systemd sends the new values.
  void on_properties(systemd_bus::Message& msg) {
    sd_bus_message* m = msg.get();
    const char* iface = nullptr;
    if (sd_bus_message_read(m, "s", &iface) < 0 || iface == nullptr || std::string(iface) != kUnit) return;
    imex::UnitState next = view.state;
    bool any = false, bad = false, invalidated = false;
    if (sd_bus_message_enter_container(m, 'a', "{sv}") < 0) return;
    while (sd_bus_message_enter_container(m, 'e', "sv") > 0) {
      const char* key = nullptr;
      if (sd_bus_message_read(m, "s", &key) < 0) { bad = true; break; }
      const std::string k = key ? key : "";
      std::string* slot = k == "LoadState" ? &next.load_state : k == "ActiveState" ? &next.active_state
                        : k == "SubState" ? &next.sub_state : nullptr;
      if (slot) {
        const char* value = nullptr;
        if (sd_bus_message_enter_container(m, 'v', "s") < 0 || sd_bus_message_read(m, "s", &value) < 0 ||
            sd_bus_message_exit_container(m) < 0) { bad = true; break; }
        *slot = value ? value : "";
        any = true;
      } else if (sd_bus_message_skip(m, "v") < 0) { bad = true; break; }
      if (sd_bus_message_exit_container(m) < 0) { bad = true; break; }
    }
    if (!bad && sd_bus_message_exit_container(m) >= 0) {
      char** names = nullptr;
      if (sd_bus_message_read_strv(m, &names) >= 0 && names) {
        for (char** n = names; *n; ++n) {
          const std::string name = *n;
          if (name == "LoadState" || name == "ActiveState" || name == "SubState") invalidated = true;
          std::free(*n);
        }
        std::free(names);
      }
    }
    if (bad || invalidated || view.reach != imex::Reach::kKnown) {
      refresh();  // partial or unknown picture: read the whole state again
      if (bad) return;
    }
    if (any && view.reach == imex::Reach::kKnown) publish(imex::UnitView{view.unit, imex::Reach::kKnown, next, {}});
  }

  void refresh() {
    if (!attached) return;
    if (reading) {
      again = true;
      return;
    }
    reading = true;
    asio::co_spawn(bus_executor(), read_loop(shared_from_this()), asio::detached);
  }

  asio::any_io_executor bus_executor();

  static asio::awaitable<void> read_loop(std::shared_ptr<State> self) {
    do {
      self->again = false;
      if (!self->attached || !self->bus.connected()) break;
      co_await self->read_once();
    } while (self->again);
    self->reading = false;
  }

  void problem(const Error& e, bool systemd_absent) {
    if (systemd_absent) {
      publish(imex::UnitView{view.unit, imex::Reach::kNoSystemd, {}, "systemd (" + std::string(kService) +
                                                                        ") is not on the " + bus.endpoint().describe()});
      return;
    }
    if (e.code == ErrorCode::kUnavailable) return;  // the connection went; the reconnect reads again
    if (e.message != last_problem) log->warn("imex unit={} cannot read its state: {}, ignoring", view.unit, e.message);
    last_problem = e.message;
  }

  asio::awaitable<void> read_once() {
    // Ask systemd for unit signals; it counts subscribers per connection, so repeats are harmless.
    auto sub = co_await bus.call({kService, kManagerPath, kManager, "Subscribe", {}, std::chrono::seconds(25)});
    if (!attached) co_return;
    if (!sub && no_systemd(sub.error())) co_return problem(sub.error(), true);
    const std::string unit = view.unit;
    auto append = [unit](sd_bus_message* m) { return sd_bus_message_append(m, "s", unit.c_str()); };
    auto got = co_await bus.call({kService, kManagerPath, kManager, "GetUnit", append, std::chrono::seconds(25)});
    if (attached && !got && no_such_unit(got.error()))
      got = co_await bus.call({kService, kManagerPath, kManager, "LoadUnit", append, std::chrono::seconds(25)});
    if (!attached) co_return;
    if (!got) co_return problem(got.error(), no_systemd(got.error()));
    auto unit_path = got->read_string();
    if (!unit_path) co_return problem(unit_path.error(), false);
    set_props_match(*unit_path);
    imex::UnitState state;
    for (auto [prop, out] : {std::pair{"LoadState", &state.load_state}, std::pair{"ActiveState", &state.active_state},
                             std::pair{"SubState", &state.sub_state}}) {
      auto value = co_await bus.get_string_property(kService, *unit_path, kUnit, prop);
      if (!attached) co_return;
      if (!value) co_return problem(value.error(), no_systemd(value.error()));
      *out = *value;
    }
    ++reads;
    publish(imex::UnitView{view.unit, imex::Reach::kKnown, std::move(state), {}});
  }

  asio::any_io_executor executor;
};

asio::any_io_executor ImexUnitWatcher::State::bus_executor() { return executor; }

ImexUnitWatcher::ImexUnitWatcher(systemd_bus::BusConnection& bus, std::string unit)
    : state_(std::make_shared<State>(bus, std::move(unit))) {}

ImexUnitWatcher::~ImexUnitWatcher() { state_->detach(); }

std::string ImexUnitWatcher::unit_path(const std::string& unit) {
  char* out = nullptr;
  if (sd_bus_path_encode("/org/freedesktop/systemd1/unit", unit.c_str(), &out) < 0 || !out) return {};
  std::string path = out;
  std::free(out);
  return path;
}

void ImexUnitWatcher::start(asio::any_io_executor executor) {
  auto& s = *state_;
  if (s.attached) return;
  s.attached = true;
  s.executor = std::move(executor);
  std::weak_ptr<State> weak = state_;
  s.set_props_match(unit_path(s.view.unit));
  s.owner_match = s.bus.add_match(
      "type='signal',sender='org.freedesktop.DBus',path='/org/freedesktop/DBus',interface='org.freedesktop.DBus',"
      "member='NameOwnerChanged',arg0='" + std::string(kService) + "'",
      [weak](systemd_bus::Message& m) {
        auto self = weak.lock();
        if (!self || !self->attached) return;
        const char *name = nullptr, *old_owner = nullptr, *new_owner = nullptr;
        if (sd_bus_message_read(m.get(), "sss", &name, &old_owner, &new_owner) >= 0 && new_owner && !*new_owner) {
          self->problem(make_error(ErrorCode::kNotFound, "systemd left the bus"), true);
          return;
        }
        self->refresh();  // systemd (re)appeared: read again and subscribe again
      });
  // Runs on every (re)connect; the read itself is a coroutine on the io_context.
  s.hook = s.bus.add_connect_hook([weak](sd_bus*) -> Status {
    if (auto self = weak.lock()) self->refresh();
    return {};
  });
}

const imex::UnitView& ImexUnitWatcher::view() const { return state_->view; }
void ImexUnitWatcher::on_change(Listener listener) { state_->listeners.push_back(std::move(listener)); }
uint64_t ImexUnitWatcher::reads() const { return state_->reads; }

}  // namespace nvdra::drivers
