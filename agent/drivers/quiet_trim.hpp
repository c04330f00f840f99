#pragma once
// QuietTrim — hands the heap's free pages back to the kernel (malloc_trim) once a driver's work has
// gone quiet: after the last claim call of a burst has ended (HeapTrimmingHandler), and after its
// ResourceSlices are stored (publishing builds and parses each slice's JSON: at 520 devices ~4 MiB
// freed but kept resident by glibc). One trim per quiet period, none while work goes on. The trim
// runs on the WorkerPool: it walks the heap under the arena locks. io_context thread only.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <functional>
#include <memory>

namespace nvdra::runtime { class WorkerPool; }

namespace nvdra::drivers {

class QuietTrim {
 public:
  using Trim = std::function<void()>;
  // Between the calls of one burst (a pod's claims, kubelet's retries) there are milliseconds.
  static constexpr std::chrono::milliseconds kQuiet{200};
  // The real Trim: glibc's malloc_trim(0); logs the resident set before and after at debug level.
  static void malloc_trim();

  QuietTrim(boost::asio::any_io_executor ex, runtime::WorkerPool& workers, std::chrono::milliseconds quiet = kQuiet,
            Trim trim = &QuietTrim::malloc_trim);

  void begin();    // work started: no trim until it ends
  void end();      // work ended: a trim once `quiet` passes with none in flight
  void request();  // work that was not tracked ended (slices stored): the same as begin() then end()

 private:
  runtime::WorkerPool& workers_;
  std::chrono::milliseconds quiet_;
  Trim trim_;
  boost::asio::steady_timer timer_;
  std::shared_ptr<int> in_flight_ = std::make_shared<int>(0);  // shared with a pending timer handler
};

}  // namespace nvdra::drivers
