#include "fm/mock/fm_machine.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace nvdra::fm::mock {
namespace {

Error bad(const std::string& path, const std::string& field, const std::string& why) {
  return make_error(ErrorCode::kInvalidArgument, "profile " + path + ": " + field + ": " + why);
}

}  // namespace

Result<FmProfile> load_fm_profile(const std::string& path) {
  FmProfile out;
  try {
    const YAML::Node root = YAML::LoadFile(path);
    const YAML::Node fm = root["fabricManager"];
    if (!fm) return out;
    out.present = true;
    for (const auto& kv : fm) {
      const auto key = kv.first.as<std::string>();
      if (key != "running" && key != "mode" && key != "tcpAddress" && key != "nvlinks" && key != "nvlinkRateMBps" &&
          key != "partitions")
        return bad(path, "fabricManager." + key, "unknown field");
    }
    if (fm["running"]) out.running = fm["running"].as<bool>();
    if (fm["tcpAddress"]) out.tcp_address = fm["tcpAddress"].as<std::string>();
    const std::string mode = fm["mode"] ? fm["mode"].as<std::string>() : "sharedNVSwitch";
    if (mode != "sharedNVSwitch" && mode != "bareMetal")
      return bad(path, "fabricManager.mode", "'" + mode + "' is not sharedNVSwitch or bareMetal");
    out.shared_nvswitch = mode == "sharedNVSwitch";
    const unsigned links = fm["nvlinks"] ? fm["nvlinks"].as<unsigned>() : 18;
    const unsigned rate = fm["nvlinkRateMBps"] ? fm["nvlinkRateMBps"].as<unsigned>() : 25000;
    const YAML::Node parts = fm["partitions"];
    if (!parts || (parts.IsScalar() && parts.as<std::string>() == "hgx8")) {
      out.partitions = hgx8_partitions(links, rate);
    } else if (parts.IsSequence()) {
      for (std::size_t i = 0; i < parts.size(); ++i) {
        const std::string f = "fabricManager.partitions[" + std::to_string(i) + "]";
        if (!parts[i]["id"] || !parts[i]["gpus"] || !parts[i]["gpus"].IsSequence())
          return bad(path, f, "needs id and gpus (a list of module ids)");
        Partition p;
        p.id = parts[i]["id"].as<unsigned>();
        const auto gpus = parts[i]["gpus"].as<std::vector<unsigned>>();
        if (gpus.empty() || gpus.size() > 16) return bad(path, f + ".gpus", "1 to 16 module ids");
        for (unsigned m : gpus) p.gpus.push_back(PartitionGpu{m, gpus.size() > 1 ? links : 0, links, rate});
        out.partitions.push_back(std::move(p));
      }
    } else {
      return bad(path, "fabricManager.partitions", "hgx8 or a list of {id, gpus}");
    }
  } catch (const YAML::Exception& e) {
    return bad(path, "fabricManager", e.what());
  }
  return out;
}

std::string state_path_for_profile(const std::string& profile_path) {
  std::string base = profile_path.substr(profile_path.find_last_of('/') + 1);
  if (base.size() > 5 && base.compare(base.size() - 5, 5, ".yaml") == 0) base.resize(base.size() - 5);
  const char* dir = std::getenv("NVDRA_MOCK_STATE_DIR");
  if (dir != nullptr && *dir != '\0') return std::string(dir) + "/" + base + ".fm.state";
  return profile_path + ".fm.state";
}

namespace {

FmState parse(const std::string& text) {
  FmState s;
  if (text.empty()) return s;
  try {
    const YAML::Node n = YAML::Load(text);
    if (n["active"]) s.active = n["active"].as<std::vector<unsigned>>();
    if (n["running"]) s.running = n["running"].as<bool>();
    if (n["lastConnect"]) s.last_connect = n["lastConnect"].as<std::string>();
    for (const auto& f : n["failures"])
      s.failures.push_back(Failure{f["function"].as<std::string>(), f["rc"].as<int>(),
                                   f["remaining"] ? f["remaining"].as<unsigned>() : 1u});
    for (const auto& kv : n["calls"]) s.calls[kv.first.as<std::string>()] = kv.second.as<unsigned>();
  } catch (const YAML::Exception&) {
    return FmState{};  // a torn or foreign file reads as a freshly booted fabric
  }
  return s;
}

// JSON (YAML's flow style with quoted strings), so a test reads it with json.load.
std::string serialize(const FmState& s) {
  YAML::Emitter out;
  out.SetStringFormat(YAML::DoubleQuoted);
  out << YAML::Flow << YAML::BeginMap;
  out << YAML::Key << "active" << YAML::Value << YAML::Flow << s.active;
  if (s.running) out << YAML::Key << "running" << YAML::Value << *s.running;
  out << YAML::Key << "failures" << YAML::Value << YAML::BeginSeq;
  for (const auto& f : s.failures)
    out << YAML::BeginMap << YAML::Key << "function" << YAML::Value << f.function << YAML::Key << "rc" << YAML::Value
        << f.rc << YAML::Key << "remaining" << YAML::Value << f.remaining << YAML::EndMap;
  out << YAML::EndSeq << YAML::Key << "calls" << YAML::Value << YAML::BeginMap;
  for (const auto& [k, v] : s.calls) out << YAML::Key << k << YAML::Value << v;
  out << YAML::EndMap << YAML::Key << "lastConnect" << YAML::Value << s.last_connect << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace

void with_state(const std::string& path, const std::function<bool(FmState&)>& fn) {
  const int lock = ::open((path + ".lock").c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
  if (lock >= 0) ::flock(lock, LOCK_EX);
  std::stringstream text;
  if (std::ifstream in(path); in) text << in.rdbuf();
  FmState state = parse(text.str());
  if (fn(state)) {
    // Whole-file replace: a reader never sees half a state.
    const std::string tmp = path + ".tmp";
    if (std::ofstream out(tmp, std::ios::trunc); out) {
      out << serialize(state);
      out.close();
      ::rename(tmp.c_str(), path.c_str());
    }
  }
  if (lock >= 0) ::close(lock);  // releases the flock
}

}  // namespace nvdra::fm::mock
