#include "agent/drivers/quiet_trim.hpp"

#include <malloc.h>

#include <boost/asio/post.hpp>

#include <fstream>
#include <mutex>
#include <string>

#include "agent/base/log.hpp"
#include "agent/runtime/worker_pool.hpp"

namespace nvdra::drivers {
namespace {

// The process's resident set in kB (VmRSS), 0 when /proc cannot say.
long resident_kb() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  return 0;
}

}  // namespace

void QuietTrim::malloc_trim() {
  // One trim at a time in the process (each driver has its QuietTrim, and both go quiet together after
  // the start): under a sanitizer glibc's malloc is first initialised by a trim, and two threads doing
  // that at once both take its main arena, which aborts the second one's exit.
  static std::mutex one_at_a_time;
  std::lock_guard lock(one_at_a_time);
  auto log = nvdra::logger("agent");
  if (!log->should_log(spdlog::level::debug)) {
    ::malloc_trim(0);
    return;
  }
  const long before = resident_kb();
  ::malloc_trim(0);
  log->debug("heap trimmed: resident {} -> {} kB", before, resident_kb());
}

QuietTrim::QuietTrim(boost::asio::any_io_executor ex, runtime::WorkerPool& workers, std::chrono::milliseconds quiet,
                     Trim trim)
    : workers_(workers), quiet_(quiet), trim_(std::move(trim)), timer_(ex) {}

void QuietTrim::begin() { ++*in_flight_; }

void QuietTrim::end() {
  if (--*in_flight_ > 0) return;
  // Re-arming aborts the previous wait: one trim per quiet period, none while work comes. The
  // handler holds no `this`: it may run after this object is gone (shutdown).
  timer_.expires_after(quiet_);
  timer_.async_wait([in_flight = in_flight_, pool = &workers_, trim = trim_](boost::system::error_code ec) {
    if (!ec && *in_flight == 0) boost::asio::post(pool->executor(), trim);
  });
}

void QuietTrim::request() {
  begin();
  end();
}

}  // namespace nvdra::drivers
