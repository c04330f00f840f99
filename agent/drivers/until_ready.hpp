#pragma once
// until_ready — waits for the agent's readiness (READY=1) with a bound: for what the agent starts
// only once it is ready (the ResourceSlice watch, driver-managed IMEX's watches), so that its
// requests and TLS handshakes stay off the start, yet never wait for a start that does not end.
// io_context thread only; cancellable.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <chrono>

#include "agent/runtime/readiness.hpp"

namespace nvdra::drivers {

// How long what waits for readiness waits at most: a start that is not ready by then (the API server
// refusing slices, kubelet not registering) holds it back no longer.
inline constexpr std::chrono::seconds kAfterReadyAtMost{5};

// True once the agent is ready (at once when it already is); false when `at_most` passed first.
boost::asio::awaitable<bool> until_ready(runtime::Readiness& readiness, boost::asio::any_io_executor ex,
                                         std::chrono::milliseconds at_most);

}  // namespace nvdra::drivers
