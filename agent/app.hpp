#pragma once
// App — the agent process: one io_context, one worker pool, one supervisor, and the components
// the options ask for. run() returns the process exit status.
#include <memory>
#include <vector>

#include "agent/runtime/component.hpp"
#include "agent/config/options.hpp"

namespace nvdra::systemd { class Notifier; }

namespace nvdra {

class App {
 public:
  App(config::Options options, std::unique_ptr<systemd::Notifier> notifier);
  ~App();
  int run();

 private:
  config::Options options_;
  std::unique_ptr<systemd::Notifier> notifier_;
};

}  // namespace nvdra
