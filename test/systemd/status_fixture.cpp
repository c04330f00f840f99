// status_fixture — stands in for the agent in the CLI tests: serves the sample snapshot as
// io.nvdra.Agent1 on the system bus (DBUS_SYSTEM_BUS_ADDRESS), prints "serving" once it owns the
// name, switches to a changed snapshot on SIGUSR1, and exits cleanly on SIGTERM.
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <csignal>
#include <cstdio>

#include "agent/systemd_bus/status_service.hpp"
#include "test/systemd/sample_snapshot.hpp"

namespace asio = boost::asio;

int main() {
  // stdout carries the "serving"/"updated" lines the test waits for; logs go to stderr.
  spdlog::set_default_logger(spdlog::stderr_logger_mt("fixture"));
  asio::io_context io(1);
  nvdra::systemd_bus::StatusService service(io.get_executor());
  service.update(nvdra::test::sample_snapshot());
  asio::cancellation_signal stop;
  asio::co_spawn(io, service.run(), asio::bind_cancellation_slot(stop.slot(), asio::detached));

  asio::signal_set signals(io, SIGTERM, SIGINT, SIGUSR1);
  std::function<void(boost::system::error_code, int)> on_signal = [&](boost::system::error_code ec, int sig) {
    if (ec) return;
    if (sig == SIGUSR1) {
      auto snap = service.snapshot();
      snap.devices[0].health = nvdra::systemd_bus::kHealthUnhealthy;
      service.update(snap);
      std::puts("updated");
      std::fflush(stdout);
      signals.async_wait(on_signal);
      return;
    }
    stop.emit(asio::cancellation_type::all);
  };
  signals.async_wait(on_signal);

  // Tell the test when the name is ours: it waits for this line instead of sleeping.
  service.on_name_owned([] {
    std::puts("serving");
    std::fflush(stdout);
  });
  io.run();
  return 0;
}
