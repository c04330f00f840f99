// Watch-stream parse throughput: the same several-MB stream of ResourceSlice and ResourceClaim
// events decoded by WatchDecoder (simdjson On-Demand) and by Boost.JSON's DOM parser doing the
// same work (event type, metadata.name/resourceVersion, a copy of the object). Reports MB/s.
#include <benchmark/benchmark.h>

#include <boost/json.hpp>

#include <string>
#include <vector>

#include "k8s/watch_decoder.hpp"

namespace {

namespace json = boost::json;

json::object slice_event(int i) {
  json::array devices;
  for (int d = 0; d < 8; ++d) {
    json::object attrs{{"type", json::object{{"string", "gpu"}}},
                       {"index", json::object{{"int", d}}},
                       {"uuid", json::object{{"string", "GPU-" + std::to_string(i * 8 + d) + "-6e2b3c1a-9f0d-4a47"}}},
                       {"productName", json::object{{"string", "NVIDIA H100 80GB HBM3"}}},
                       {"driverVersion", json::object{{"version", "580.65.6"}}},
                       {"cudaComputeCapability", json::object{{"version", "9.0.0"}}}};
    devices.push_back(json::object{{"name", "gpu-" + std::to_string(d)},
                                   {"attributes", std::move(attrs)},
                                   {"capacity", json::object{{"memory", json::object{{"value", "80Gi"}}}}}});
  }
  json::object meta{{"name", "node" + std::to_string(i) + "-gpu.nvidia.com-x7k2p"},
                    {"resourceVersion", std::to_string(1000 + i)},
                    {"uid", "0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0"}};
  json::object spec{{"driver", "gpu.nvidia.com"},
                    {"nodeName", "node" + std::to_string(i)},
                    {"pool", json::object{{"name", "node" + std::to_string(i)}, {"generation", 1}, {"resourceSliceCount", 1}}},
                    {"devices", std::move(devices)}};
  return json::object{{"type", i % 3 == 0 ? "ADDED" : "MODIFIED"},
                      {"object", json::object{{"apiVersion", "resource.k8s.io/v1"}, {"kind", "ResourceSlice"},
                                              {"metadata", std::move(meta)}, {"spec", std::move(spec)}}}};
}

json::object claim_event(int i) {
  json::array results;
  results.push_back(json::object{{"request", "gpu"}, {"driver", "gpu.nvidia.com"}, {"pool", "node1"}, {"device", "gpu-0"}});
  json::array config;
  config.push_back(json::object{{"source", "FromClaim"}, {"requests", json::array{"gpu"}},
                                {"opaque", json::object{{"driver", "gpu.nvidia.com"},
                                                        {"parameters", json::object{{"apiVersion", "resource.nvidia.com/v1beta1"},
                                                                                    {"kind", "GpuConfig"},
                                                                                    {"sharing", json::object{{"strategy", "TimeSlicing"}}}}}}}});
  json::object alloc{{"devices", json::object{{"results", std::move(results)}, {"config", std::move(config)}}}};
  json::object meta{{"name", "claim-" + std::to_string(i)}, {"namespace", "team-a"},
                    {"resourceVersion", std::to_string(5000 + i)}, {"uid", "9a8b7c6d-5e4f-3a2b-1c0d-e9f8a7b6c5d4"}};
  json::object spec{{"devices", json::object{{"requests", json::array{json::object{
                                                  {"name", "gpu"},
                                                  {"exactly", json::object{{"deviceClassName", "gpu.nvidia.com"}}}}}}}}};
  return json::object{{"type", "MODIFIED"},
                      {"object", json::object{{"apiVersion", "resource.k8s.io/v1"}, {"kind", "ResourceClaim"},
                                              {"metadata", std::move(meta)}, {"spec", std::move(spec)},
                                              {"status", json::object{{"allocation", std::move(alloc)}}}}}};
}

const std::string& stream() {
  static const std::string s = [] {
    std::string out;
    for (int i = 0; out.size() < (std::size_t{8} << 20); ++i) {
      out += json::serialize(i % 2 == 0 ? slice_event(i) : claim_event(i));
      out += '\n';
    }
    return out;
  }();
  return s;
}

void BM_WatchStream_Simdjson(benchmark::State& state) {
  const auto& bytes = stream();
  for (auto _ : state) {
    nvdra::k8s::WatchDecoder decoder(std::size_t{16} << 20);
    std::vector<nvdra::k8s::DecodedFrame> out;
    out.reserve(16384);
    for (std::size_t i = 0; i < bytes.size(); i += 65536) decoder.feed(std::string_view(bytes).substr(i, 65536), out);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes.size()));
}

void BM_WatchStream_BoostJsonDom(benchmark::State& state) {
  const auto& bytes = stream();
  for (auto _ : state) {
    std::vector<nvdra::k8s::WatchEvent> out;
    out.reserve(16384);
    std::size_t start = 0;
    while (start < bytes.size()) {
      const auto nl = bytes.find('\n', start);
      auto doc = json::parse(std::string_view(bytes).substr(start, nl - start));
      start = nl + 1;
      const auto& obj = doc.as_object();
      nvdra::k8s::WatchEvent ev;
      ev.type = obj.at("type").as_string() == "ADDED" ? nvdra::k8s::WatchEventType::kAdded
                                                      : nvdra::k8s::WatchEventType::kModified;
      const auto& object = obj.at("object").as_object();
      const auto& meta = object.at("metadata").as_object();
      ev.name = meta.at("name").as_string();
      ev.resource_version = meta.at("resourceVersion").as_string();
      ev.object = json::serialize(object);  // the raw object, as WatchDecoder hands it out
      out.push_back(std::move(ev));
    }
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes.size()));
}

BENCHMARK(BM_WatchStream_Simdjson)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_WatchStream_BoostJsonDom)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
