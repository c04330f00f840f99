#pragma once
// SliceWatch — the LIST and WATCH of this node's ResourceSlices, one for every driver's
// SlicePublisher. Shared (no driver in the selector: spec.nodeName=<node>), the agent holds one
// watch for both drivers where each driver's own would be two; idle, a node's load on the API
// server is its watches (issue #33: nvdra held 4 per node against upstream's 3).
//
// serve() is what each publisher awaits: the first caller runs the watch and every caller's
// ChangeSignal is notified after each change; when the caller that runs it leaves (its driver
// stopped), a remaining caller takes over (one LIST more). Objects of every driver are in
// reflector(): a publisher keeps to its own with driver_of().
// Threading: all members on the executor's thread.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "k8s/api_server.hpp"
#include "k8s/change_signal.hpp"
#include "k8s/reflector.hpp"

namespace nvdra::k8s {

struct SliceWatchOptions {
  std::string node_name;
  std::string driver;  // empty: every driver's slices on the node (the shared watch)
  std::chrono::seconds watch_timeout{300};
  std::chrono::milliseconds backoff_base{500};
  std::chrono::milliseconds backoff_cap{30000};
  // The reflector's before_first_watch: the agent opens the watch once it is ready (its start's
  // LIST is enough to publish; the watch's TLS handshake and request then stay off the start).
  std::function<boost::asio::awaitable<void>()> before_first_watch;
};

class SliceWatch {
 public:
  SliceWatch(boost::asio::any_io_executor ex, std::shared_ptr<ApiServer> api, SliceWatchOptions options);

  // Until cancelled: runs the watch unless another caller does, notifying `changed` after each
  // change (and at once when the watch has already listed).
  boost::asio::awaitable<void> serve(ChangeSignal& changed);

  Reflector& reflector() { return reflector_; }
  const Reflector& reflector() const { return reflector_; }
  const std::string& field_selector() const { return selector_; }

  // spec.driver of a stored slice, read even when the rest of it is not a slice we can decode;
  // empty when the JSON has none.
  static std::string driver_of(std::string_view json);

 private:
  boost::asio::awaitable<void> fan_out();

  std::string selector_;
  ChangeSignal changed_;  // the reflector's: fanned out to every subscriber
  Reflector reflector_;
  std::vector<ChangeSignal*> subscribers_;
  bool running_ = false;
  boost::asio::steady_timer handoff_;  // cancelled when the caller running the watch leaves
};

}  // namespace nvdra::k8s
