#include "k8s/client_config.hpp"

#include "agent/base/bounded_read.hpp"
#include "k8s/server_url.hpp"

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#ifndef NVDRA_VERSION
#define NVDRA_VERSION "0.0.0"
#endif

namespace nvdra::k8s {
namespace {

// Kubeconfigs with a few embedded certificates are a few KiB; far larger is not one.
constexpr std::size_t kMaxKubeconfigBytes = std::size_t{4} << 20;

Error config_error(const std::string& file, const std::string& field, std::string message) {
  Error err = make_error(ErrorCode::kInvalidArgument, "kubeconfig " + file + ": " + std::move(message));
  err.field = field;
  return err;
}

Result<std::string> read_file(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(ErrorCode::kFailedPrecondition, "cannot read " + what + " file " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A default YAML::Node is a valid null node, not "absent": say "not found" with an optional.
std::optional<YAML::Node> find_named(const YAML::Node& list, const std::string& name, const char* inner) {
  if (!list || !list.IsSequence()) return std::nullopt;
  for (const auto& item : list) {
    if (item["name"] && item["name"].as<std::string>() == name && item[inner].IsMap()) return item[inner];
  }
  return std::nullopt;
}

// Reads `<key>-data` (base64) or `<key>` (a path, relative to the kubeconfig's folder).
Result<std::string> data_or_file(const YAML::Node& node, const std::string& key, const std::string& file,
                                 const std::string& field_prefix, const std::filesystem::path& base) {
  if (node[key + "-data"]) {
    auto decoded = decode_base64_strict(node[key + "-data"].as<std::string>());
    if (!decoded) return config_error(file, field_prefix + "." + key + "-data", decoded.error().message);
    return std::move(*decoded);
  }
  if (node[key]) {
    std::filesystem::path p = node[key].as<std::string>();
    if (p.is_relative()) p = base / p;
    return read_file(p.string(), field_prefix + "." + key);
  }
  return std::string();
}

Status split_server(const std::string& server, const std::string& file, ClientConfig& cfg) {
  auto url = parse_server_url(server);
  if (!url) return config_error(file, "clusters[].cluster.server", url.error().message);
  cfg.host = std::move(url->host);
  cfg.port = std::move(url->port);
  cfg.path_prefix = std::move(url->path_prefix);
  return {};
}

}  // namespace

std::string default_user_agent() { return std::string("nvdra-agent/") + NVDRA_VERSION; }

Result<ClientConfig> load_kubeconfig(const std::string& path) {
  YAML::Node root;
  auto text = read_bounded(path, kMaxKubeconfigBytes, "kubeconfig");
  if (!text) return text.error();
  try {
    root = YAML::Load(*text);
  } catch (const YAML::DeepRecursion& e) {
    return make_error(ErrorCode::kInvalidArgument, "kubeconfig " + path + ": cannot parse: nested deeper than " +
                                                       std::to_string(e.depth()) + " levels");
  } catch (const std::exception& e) {
    return make_error(ErrorCode::kInvalidArgument, "kubeconfig " + path + ": cannot parse: " + e.what());
  }
  try {
    const auto base = std::filesystem::path(path).parent_path();
    if (!root["current-context"]) return config_error(path, "current-context", "is not set");
    const auto ctx_name = root["current-context"].as<std::string>();
    const auto found_context = find_named(root["contexts"], ctx_name, "context");
    if (!found_context) return config_error(path, "contexts", "no context named \"" + ctx_name + "\"");
    const YAML::Node& context = *found_context;
    const auto cluster_name = context["cluster"] ? context["cluster"].as<std::string>() : "";
    const auto found_cluster = find_named(root["clusters"], cluster_name, "cluster");
    if (!found_cluster) return config_error(path, "clusters", "no cluster named \"" + cluster_name + "\"");
    const YAML::Node& cluster = *found_cluster;
    ClientConfig cfg;
    if (!cluster["server"]) return config_error(path, "clusters[].cluster.server", "is not set");
    if (auto st = split_server(cluster["server"].as<std::string>(), path, cfg); !st) return st.error();
    cfg.insecure_skip_tls_verify = cluster["insecure-skip-tls-verify"] && cluster["insecure-skip-tls-verify"].as<bool>();
    auto ca = data_or_file(cluster, "certificate-authority", path, "clusters[].cluster", base);
    if (!ca) return ca.error();
    cfg.ca_pem = std::move(*ca);
    const auto user_name = context["user"] ? context["user"].as<std::string>() : "";
    if (const auto found_user = find_named(root["users"], user_name, "user")) {
      const YAML::Node& user = *found_user;
      if (user["token"]) cfg.token = user["token"].as<std::string>();
      if (user["tokenFile"]) {
        std::filesystem::path p = user["tokenFile"].as<std::string>();
        cfg.token_file = (p.is_relative() ? base / p : p).string();
      }
      auto cert = data_or_file(user, "client-certificate", path, "users[].user", base);
      if (!cert) return cert.error();
      auto key = data_or_file(user, "client-key", path, "users[].user", base);
      if (!key) return key.error();
      cfg.client_cert_pem = std::move(*cert);
      cfg.client_key_pem = std::move(*key);
      if (cfg.client_cert_pem.empty() != cfg.client_key_pem.empty()) {
        return config_error(path, "users[].user.client-key",
                            "client-certificate and client-key must be given together");
      }
    }
    cfg.user_agent = default_user_agent();
    return cfg;
  } catch (const YAML::Exception& e) {
    return make_error(ErrorCode::kInvalidArgument, "kubeconfig " + path + ": wrong field type: " + e.what());
  }
}

InClusterSource in_cluster_from_environment() {
  InClusterSource src;
  for (const char* name : {"KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"}) {
    if (const char* v = std::getenv(name)) src.env[name] = v;
  }
  return src;
}

Result<ClientConfig> load_in_cluster(const InClusterSource& source) {
  const auto host = source.env.find("KUBERNETES_SERVICE_HOST");
  const auto port = source.env.find("KUBERNETES_SERVICE_PORT");
  if (host == source.env.end() || host->second.empty() || port == source.env.end() || port->second.empty()) {
    return make_error(ErrorCode::kFailedPrecondition,
                      "not running in a cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set "
                      "(or pass --kubeconfig)");
  }
  ClientConfig cfg;
  cfg.host = host->second;
  cfg.port = port->second;
  auto ca = read_file(source.ca_file, "service-account CA");
  if (!ca) return ca.error();
  cfg.ca_pem = std::move(*ca);
  if (!std::filesystem::exists(source.token_file)) {
    return make_error(ErrorCode::kFailedPrecondition, "service-account token file " + source.token_file + " is missing");
  }
  cfg.token_file = source.token_file;
  cfg.user_agent = default_user_agent();
  return cfg;
}

Result<ClientConfig> load_client_config(const std::string& kubeconfig_path, double qps, int burst) {
  auto cfg = kubeconfig_path.empty() ? load_in_cluster(in_cluster_from_environment()) : load_kubeconfig(kubeconfig_path);
  if (!cfg) return cfg;
  cfg->qps = qps;
  cfg->burst = burst;
  return cfg;
}

}  // namespace nvdra::k8s
