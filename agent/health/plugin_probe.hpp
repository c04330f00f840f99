#pragma once
// probe_plugin — upstream's health check for one kubelet plugin (cmd/*-kubelet-plugin/health.go):
// a GetInfo call on the registration socket and an empty NodePrepareResources (v1beta1) on the DRA
// socket. Each call goes over a connection of its own, so a socket file that went away (kubelet's
// registration directory cleaned, the plugin stopped) fails the probe instead of riding an old
// connection.
//
// Contract: io_context thread; the calls run on grpc++'s callback API and complete back on the
// caller's executor, so the loop never blocks. Cancellation (terminal) cancels the call in flight;
// the coroutine still returns only after gRPC has let go of the call. Returns "" when both calls
// succeed, otherwise which call failed and gRPC's status.
#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <string>

#include "agent/kubelet/plugin_sockets.hpp"

namespace nvdra::health {

boost::asio::awaitable<std::string> probe_plugin(kubelet::SocketPaths sockets, std::chrono::milliseconds deadline);

}  // namespace nvdra::health
