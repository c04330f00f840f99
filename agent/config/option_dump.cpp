#include "agent/config/option_dump.hpp"

#include <boost/json.hpp>

#include "agent/config/feature_gates.hpp"
#include "agent/config/option_table.hpp"

namespace nvdra::config {

std::string options_json() {
  namespace json = boost::json;
  json::array options;
  auto strings = [](const std::vector<std::string>& v) { return json::array(v.begin(), v.end()); };
  for (const auto& spec : option_table())
    options.push_back(json::object{{"name", spec.name},
                                   {"aliases", strings(spec.aliases)},
                                   {"envs", strings(spec.envs)},
                                   {"ignored", spec.ignored}});
  // Read by the loader itself rather than through the table.
  options.push_back(json::object{{"name", "config"}, {"aliases", json::array{}}, {"envs", json::array{"NVDRA_CONFIG"}},
                                 {"ignored", false}});
  json::array gates;
  auto stage = [](Stage s) { return s == Stage::kAlpha ? "Alpha" : s == Stage::kBeta ? "Beta" : "GA"; };
  for (const auto& g : FeatureGates::known())
    gates.push_back(json::object{{"name", g.name}, {"default", g.default_value}, {"stage", stage(g.stage)}});
  for (const char* all : {"AllAlpha", "AllBeta"})
    gates.push_back(json::object{{"name", all}, {"default", false}, {"stage", "meta"}});
  // Environment variables outside the table that configure a gate.
  // (The FabricManager endpoint variables only matter with FabricManagerPartitioning or FabricTopologySupport.)
  json::array gate_envs{json::object{{"env", "FABRIC_TOPOLOGY_SUPPORT"}, {"gate", "FabricTopologySupport"}},
                        json::object{{"env", "NVIDIA_FABRICMANAGER_ADDRESS"}, {"gate", "FabricManagerPartitioning"}},
                        json::object{{"env", "NVIDIA_FABRICMANAGER_UNIX_SOCKET"}, {"gate", "FabricManagerPartitioning"}}};
  return json::serialize(json::object{{"options", std::move(options)}, {"gates", std::move(gates)},
                                      {"gateEnvs", std::move(gate_envs)}}) +
         "\n";
}

}  // namespace nvdra::config
