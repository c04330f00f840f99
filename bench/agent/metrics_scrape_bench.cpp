// The cost of one scrape of the metrics page on a realistic node (both drivers, claims of every
// device type prepared, errors of each kind seen once, the API client's verbs and codes, IMEX unit
// watched): Metrics::render() whole (registry collect, /proc/self reads, ordering, text), the
// /proc/self part alone, and one full HTTP GET over loopback through MetricsServer. Reported per
// iteration: time, heap allocations (a counting operator new in this binary) and page bytes.
// Run: build/bench/agent/agent_metrics_bench
#include <benchmark/benchmark.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>

#include <atomic>
#include <cstdlib>
#include <new>
#include <string>
#include <thread>

#include "agent/metrics/metrics.hpp"
#include "agent/metrics/metrics_server.hpp"
#include "agent/metrics/process_metrics.hpp"

namespace {
std::atomic<uint64_t> g_allocations{0};
}  // namespace

void* operator new(std::size_t n) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace {

using nvdra::metrics::Metrics;
using nvdra::metrics::Operation;

const std::string kGpu = "gpu.nvidia.com";
const std::string kCd = "compute-domain.nvidia.com";

// What a busy 8-GPU node's agent has on its page after a while.
void populate(Metrics& m) {
  for (const auto& d : {kGpu, kCd})
    for (auto op : {Operation::kPrepare, Operation::kUnprepare})
      for (int i = 0; i < 50; ++i) {
        m.request_started(d, op);
        const char* error = op == Operation::kPrepare ? "prepare_devices" : "unprepare_devices";
        m.request_finished(d, op, 0.002 * i, i % 25 == 0 ? error : "");
      }
  m.set_prepared_devices(kGpu, {{"gpu", 4}, {"mig", 7}, {"vfio", 0}});
  m.set_prepared_devices(kCd, {{"channel", 2}});
  m.set_mps_daemons(kGpu, 2);
  m.set_imex_unit("nvidia-imex.service", "active");
  for (const char* verb : {"get", "list", "watch", "create", "update", "delete", "version"})
    for (int code : {200, 201, 404, 409, 0}) m.api_request(verb, code);
  m.watch_restart("resourceslices");
  m.watch_restart("resourceclaims");
  m.slice_write("create", true);
  m.slice_write("update", true);
  m.slice_write("update", false);
  for (const auto& d : {kGpu, kCd}) {
    m.checkpoint_save(d);
    m.checkpoint_fsync(d);
  }
  m.mig_device_created();
  m.mig_device_destroyed();
}

void BM_RenderPage(benchmark::State& state) {
  Metrics m("gpu-node-1", "0.1.0", {kGpu, kCd});
  populate(m);
  std::size_t bytes = 0;
  uint64_t allocations = 0;
  for (auto _ : state) {
    const auto before = g_allocations.load(std::memory_order_relaxed);
    auto page = m.render();
    allocations += g_allocations.load(std::memory_order_relaxed) - before;
    bytes = page.size();
    benchmark::DoNotOptimize(page);
  }
  std::size_t series = 0;
  for (char c : m.render()) series += c == '\n';
  state.counters["page_bytes"] = static_cast<double>(bytes);
  state.counters["page_lines"] = static_cast<double>(series);
  state.counters["allocs"] = benchmark::Counter(static_cast<double>(allocations), benchmark::Counter::kAvgIterations);
}
BENCHMARK(BM_RenderPage);

void BM_ProcessSeries(benchmark::State& state) {
  const double start = nvdra::metrics::process_start_time_seconds();
  uint64_t allocations = 0;
  for (auto _ : state) {
    const auto before = g_allocations.load(std::memory_order_relaxed);
    auto families = nvdra::metrics::collect_process_metrics(start);
    allocations += g_allocations.load(std::memory_order_relaxed) - before;
    benchmark::DoNotOptimize(families);
  }
  state.counters["allocs"] = benchmark::Counter(static_cast<double>(allocations), benchmark::Counter::kAvgIterations);
}
BENCHMARK(BM_ProcessSeries);

// One GET /metrics over loopback (new connection each time, Connection: close), the server on its
// own io_context thread as in the agent; the client is blocking Asio on the bench thread.
void BM_HttpScrape(benchmark::State& state) {
  namespace asio = boost::asio;
  using tcp = asio::ip::tcp;
  Metrics m("gpu-node-1", "0.1.0", {kGpu, kCd});
  populate(m);
  asio::io_context server_io;
  nvdra::metrics::MetricsServer server(server_io.get_executor(), "127.0.0.1:0", "/metrics",
                                       nvdra::metrics::MetricsPage{[&m] { return m.render(); }});
  asio::co_spawn(server_io, server.run(), asio::detached);
  std::thread loop([&] { server_io.run(); });
  const auto where = server.local_endpoint();
  const std::string request = "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  asio::io_context client_io;
  std::size_t bytes = 0;
  for (auto _ : state) {
    tcp::socket s(client_io);
    s.connect(where);
    asio::write(s, asio::buffer(request));
    std::string response;
    boost::system::error_code ec;
    asio::read(s, asio::dynamic_buffer(response), ec);  // until the server closes
    bytes = response.size();
  }
  state.counters["response_bytes"] = static_cast<double>(bytes);
  server_io.stop();
  loop.join();
}
BENCHMARK(BM_HttpScrape);

}  // namespace

BENCHMARK_MAIN();
