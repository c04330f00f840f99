// cdi_spec_gen <out-dir>: builds a fake node under <out-dir>/node, writes every kind of spec nvdra
// produces into <out-dir>/cdi through FileSpecStore, and prints the ids a kubelet would get as
// JSON: {"cdi_dir", "driver_root", "host_root", "version", "devices": {"<claim>/<device>": [ids]},
// "removed": [ids]}. The python schema/consumer test drives it.
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <iostream>

#include "cdi/device_edits.hpp"
#include "cdi/driver_edits.hpp"
#include "cdi/file_spec_store.hpp"
#include "cdi/naming.hpp"
#include "cdi/spec_builder.hpp"
#include "test/cdi/fake_driver_root.hpp"

namespace cdi = nvdra::cdi;

namespace {

template <class T>
T must(nvdra::Result<T> r, const char* what) {
  if (!r) {
    std::cerr << what << ": " << r.error().describe() << "\n";
    std::exit(1);
  }
  return std::move(r).value();
}

void must(nvdra::Status s, const char* what) {
  if (!s) {
    std::cerr << what << ": " << s.error().describe() << "\n";
    std::exit(1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: cdi_spec_gen <out-dir>\n";
    return 2;
  }
  const std::string out = argv[1];
  cdi::testing::FakeDriverRoot fake(cdi::testing::FakeDriverOptions{.keep_at = out + "/node"});
  const auto roots = fake.roots("/usr/bin/nvidia-cdi-hook");
  auto store = must(cdi::FileSpecStore::open(out + "/cdi"), "open store");
  cdi::DriverDiscovery discovery(roots);
  auto inv = must(discovery.current(), "discovery");
  const auto driver = cdi::driver_edits(*inv, roots);
  const auto host = cdi::host_view(*inv, roots);

  // GPU claim specs carry the driver's edits and NVIDIA_VISIBLE_DEVICES=void at spec level, as upstream.
  cdi::ContainerEdits common = driver;
  common.env.push_back("NVIDIA_VISIBLE_DEVICES=void");
  // The compute-domain base spec as the agent writes it (nvcdi's management mode).
  cdi::ContainerEdits management = cdi::management_edits(*inv, roots);
  management.env.push_back("NVIDIA_VISIBLE_DEVICES=void");
  auto cd_base = must(cdi::build_base_spec(cdi::kComputeDomainVendor, cdi::kComputeDomainBaseDevice,
                                           cdi::management_nodes(*inv, roots), management),
                      "cd base");
  must(store->write_if_changed(cd_base), "write cd base");

  const std::string gpu_claim = "3b1f0c6e-8a4d-4f43-9f3c-1d2e3f4a5b6c";
  const std::string mig_claim = "a7c2e0f1-0000-4000-8000-000000000001";
  const std::string mps_claim = "b0000000-0000-4000-8000-000000000002";
  const std::string channel_claim = "c0000000-0000-4000-8000-000000000003";
  const std::string daemon_claim = "d0000000-0000-4000-8000-000000000004";
  const std::string gone_claim = "e0000000-0000-4000-8000-000000000005";

  auto gpus = must(cdi::build_claim_spec(cdi::kGpuVendor, gpu_claim,
                                         {{"gpu-0", cdi::gpu_edits({0, "00000000:3B:00.0"}, host)},
                                          {"gpu-1", cdi::gpu_edits({1, ""}, host)}},
                                         common),
                   "gpu claim");
  auto migs = must(cdi::build_claim_spec(
                       cdi::kGpuVendor, mig_claim,
                       {{"gpu-0-mig-1g10gb-19-0", must(cdi::read_mig_edits({0, 1, 0}, host), "mig 0")},
                        {"gpu-1-mig-2g20gb-14-2", must(cdi::read_mig_edits({1, 2, 1}, host), "mig 1")}},
                       common),
                   "mig claim");
  cdi::ContainerEdits mps = cdi::gpu_edits({1, ""}, host);
  mps.append(cdi::mps_edits({out + "/node/mps/pipe", out + "/node/mps/shm", {}}));
  auto mps_spec = must(cdi::build_claim_spec(cdi::kGpuVendor, mps_claim, {{"gpu-1", mps}}, common), "mps claim");
  auto imex_major = must(cdi::read_char_device_major(roots.host_root, cdi::kImexChannelsDevice), "imex major");
  auto channel = must(cdi::build_claim_spec(cdi::kComputeDomainVendor, channel_claim,
                                            {{"channel-0", cdi::imex_channel_edits({0, imex_major})}}),
                      "channel claim");
  cdi::ImexDaemon daemon{"4026", "cd-uid", "cd", "ns", out + "/node/domains/cd-uid",
                         must(cdi::read_char_device_major(roots.host_root, cdi::kNvidiaCapsDevice), "caps major"),
                         must(cdi::read_cap(roots.host_root, "fabric-imex-mgmt"), "fabric cap")};
  auto daemon_spec = must(cdi::build_claim_spec(cdi::kComputeDomainVendor, daemon_claim,
                                                {{"daemon-0", cdi::imex_daemon_edits(daemon)}}),
                          "daemon claim");
  auto gone = must(cdi::build_claim_spec(cdi::kGpuVendor, gone_claim, {{"gpu-0", cdi::gpu_edits({0, ""}, host)}}, common),
                   "gone claim");

  // One batch for all claims: the group-commit path.
  std::vector<cdi::SpecChange> batch;
  for (const auto* s : {&gpus, &migs, &mps_spec, &channel, &daemon_spec, &gone}) batch.push_back(cdi::SpecChange::write(*s));
  must(store->apply(batch), "write claims");
  must(store->remove_claim(cdi::kGpuVendor, gone_claim), "remove claim");

  boost::json::object devices;
  auto add = [&](const cdi::BuiltSpec& s, const std::string& claim, std::vector<std::string> extra) {
    for (size_t i = 0; i < s.device_ids.size(); ++i) {
      boost::json::array ids;
      for (const auto& e : extra) ids.emplace_back(e);
      ids.emplace_back(s.device_ids[i]);
      devices[claim + "/" + s.spec.devices[i].name] = std::move(ids);
    }
  };
  add(gpus, gpu_claim, {});
  add(migs, mig_claim, {});
  add(mps_spec, mps_claim, {});
  add(channel, channel_claim, {});
  add(daemon_spec, daemon_claim, {cd_base.device_ids[0]});
  boost::json::object result;
  result["cdi_dir"] = out + "/cdi";
  result["driver_root"] = roots.driver_root;
  result["host_root"] = roots.host_root;
  result["lib_dir"] = fake.lib_dir();
  result["version"] = inv->version;
  result["devices"] = std::move(devices);
  result["removed"] = boost::json::array{gone.device_ids[0]};
  std::cout << boost::json::serialize(result) << "\n";
  return 0;
}
