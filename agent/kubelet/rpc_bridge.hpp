#pragma once
// The grpc++ callback API bridged onto the one io_context (STYLE.md §2). A callback handler runs
// on a gRPC thread and only hands off: it creates the reactor and posts the start of a coroutine to
// the io_context. The coroutine does the work there and finishes the reactor when it completes.
// A client cancel or deadline (OnCancel) and CallTracker::cancel_all() (shutdown) emit terminal
// cancellation into the coroutine. Internal to agent/kubelet: this header includes grpc++.
#include <grpcpp/grpcpp.h>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <atomic>
#include <cstddef>
#include <exception>
#include <memory>
#include <set>
#include <utility>

namespace nvdra::kubelet::rpc {

// The io_context-side state of one call. Shared by the reactor (gRPC threads post into it) and the
// coroutine, so whichever of them ends last frees it.
struct CallState {
  boost::asio::cancellation_signal cancel;
  bool cancel_requested = false;
  bool finished = false;
};

// The live calls of one gRPC server. live() may be read from any thread; the rest is io_context only.
class CallTracker {
 public:
  std::size_t live() const { return live_.load(); }
  // Cancels every live call and refuses new ones (they finish UNAVAILABLE at once).
  void close_and_cancel_all();
  bool closed() const { return closed_; }

  void add(const std::shared_ptr<CallState>& call);
  void remove(const std::shared_ptr<CallState>& call);

 private:
  std::set<std::shared_ptr<CallState>> calls_;
  std::atomic<std::size_t> live_{0};
  bool closed_ = false;
};

// Runs on a gRPC thread: OnCancel is relayed to the io_context, where the call's coroutine lives.
void relay_cancel(const boost::asio::any_io_executor& ex, std::shared_ptr<CallState> state);
// The gRPC status for a coroutine that ended with an exception.
grpc::Status status_from(std::exception_ptr failure);
// Asio 1.81 quirk (see concurrently.hpp): every spawned call body ends through this.
boost::asio::awaitable<grpc::Status> finish_quietly(boost::asio::awaitable<grpc::Status> body);

// Starts `work()` (which returns awaitable<grpc::Status>) for one call on `reactor`, from the
// io_context thread. `reactor->Finish` is called exactly once, from the io_context thread.
template <class Reactor, class Work>
void start_call(boost::asio::any_io_executor ex, CallTracker& tracker, std::shared_ptr<CallState> state,
                Reactor* reactor, Work work) {
  boost::asio::post(ex, [ex, &tracker, state = std::move(state), reactor, work = std::move(work)]() mutable {
    if (tracker.closed() || state->cancel_requested) {
      state->finished = true;
      reactor->Finish(tracker.closed() ? grpc::Status(grpc::StatusCode::UNAVAILABLE, "the plugin is shutting down")
                                       : grpc::Status(grpc::StatusCode::CANCELLED, "cancelled by the client"));
      return;
    }
    tracker.add(state);
    boost::asio::co_spawn(ex, finish_quietly(work()),
                          boost::asio::bind_cancellation_slot(
                              state->cancel.slot(), [&tracker, state, reactor](std::exception_ptr e, grpc::Status s) {
                                state->finished = true;
                                tracker.remove(state);
                                reactor->Finish(e ? status_from(e) : std::move(s));
                              }));
  });
}

class UnaryReactor final : public grpc::ServerUnaryReactor {
 public:
  UnaryReactor(boost::asio::any_io_executor ex, std::shared_ptr<CallState> state)
      : ex_(std::move(ex)), state_(std::move(state)) {}
  void OnCancel() override { relay_cancel(ex_, state_); }
  void OnDone() override { delete this; }

 private:
  boost::asio::any_io_executor ex_;
  std::shared_ptr<CallState> state_;
};

// `work` is a plain (non-coroutine) callable returning awaitable<grpc::Status>; it is invoked on
// the io_context thread, and the request/response it captures stay valid until Finish.
template <class Work>
grpc::ServerUnaryReactor* serve_unary(boost::asio::any_io_executor ex, CallTracker& tracker, Work work) {
  auto state = std::make_shared<CallState>();
  auto* reactor = new UnaryReactor(ex, state);  // deletes itself in OnDone
  start_call(ex, tracker, std::move(state), reactor, std::move(work));
  return reactor;
}

// The writing half of a server stream, used by the call's coroutine (io_context thread).
template <class Response>
class StreamWriter {
 public:
  StreamWriter(boost::asio::any_io_executor ex, grpc::ServerWriteReactor<Response>* reactor)
      : reactor_(reactor), write_done_(ex, boost::asio::steady_timer::time_point::max()) {}

  // Sends one message and waits until gRPC has taken it. False: the stream is broken.
  boost::asio::awaitable<bool> write(Response message);

  // From the reactor (gRPC thread, via post): the outstanding write completed.
  void completed(bool ok) {
    pending_ = false;
    ok_ = ok;
    write_done_.cancel();
  }

 private:
  grpc::ServerWriteReactor<Response>* reactor_;
  boost::asio::steady_timer write_done_;
  // The message being written must live until OnWriteDone: the writer is shared with the reactor.
  Response message_;
  bool pending_ = false;
  bool ok_ = true;
};

template <class Response>
class WriteReactor final : public grpc::ServerWriteReactor<Response> {
 public:
  WriteReactor(boost::asio::any_io_executor ex, std::shared_ptr<CallState> state)
      : ex_(ex), state_(std::move(state)), writer_(std::make_shared<StreamWriter<Response>>(ex, this)) {}
  void OnCancel() override { relay_cancel(ex_, state_); }
  void OnWriteDone(bool ok) override {
    boost::asio::post(ex_, [w = writer_, ok] { w->completed(ok); });
  }
  void OnDone() override { delete this; }
  const std::shared_ptr<StreamWriter<Response>>& writer() const { return writer_; }

 private:
  boost::asio::any_io_executor ex_;
  std::shared_ptr<CallState> state_;
  std::shared_ptr<StreamWriter<Response>> writer_;
};

// `work(std::shared_ptr<StreamWriter<Response>>)` returns awaitable<grpc::Status>.
template <class Response, class Work>
grpc::ServerWriteReactor<Response>* serve_stream(boost::asio::any_io_executor ex, CallTracker& tracker, Work work) {
  auto state = std::make_shared<CallState>();
  auto* reactor = new WriteReactor<Response>(ex, state);  // deletes itself in OnDone
  start_call(ex, tracker, std::move(state), reactor,
             [work = std::move(work), writer = reactor->writer()]() mutable { return work(writer); });
  return reactor;
}

}  // namespace nvdra::kubelet::rpc

#include "agent/kubelet/stream_writer_impl.hpp"  // IWYU pragma: keep
