#pragma once
// ClientConfig: where the API server is and how to authenticate, from a kubeconfig file (its
// current context) or from the pod's service account (in-cluster), as client-go's clientcmd and
// rest.InClusterConfig do it. TLS verification is on unless the kubeconfig's cluster says
// insecure-skip-tls-verify. Loading reads files: call it at startup, not on the io_context.
#include <chrono>
#include <map>
#include <memory>
#include <string>

#include "agent/base/result.hpp"

#include "agent/base/reconnect_pacing.hpp"

namespace nvdra::k8s {

struct ClientConfig {
  std::string host;             // "127.0.0.1", "kubernetes.default.svc" or "[::1]" stripped of brackets
  std::string port = "443";
  std::string path_prefix;      // "/k8s/clusters/c-abc" when the server URL has a path (a proxy); else ""
  std::string ca_pem;           // trusted CA bundle (PEM); empty: the system's default paths
  bool insecure_skip_tls_verify = false;
  std::string client_cert_pem;  // client certificate chain (PEM), optional
  std::string client_key_pem;   // its private key (PEM)
  std::string token;            // static bearer token, or
  std::string token_file;       // a file re-read when it changes (service-account token rotation)
  double qps = 5;               // --kube-api-qps
  int burst = 10;               // --kube-api-burst
  // The options that set qps and burst, named in the throttling log line.
  std::string limit_options = "--kube-api-qps/--kube-api-burst";
  int max_connections = 8;      // concurrent requests (keep-alive connections) per client; watches not counted
  std::string user_agent;       // defaults to default_user_agent()
  std::chrono::seconds request_timeout{30};
  std::shared_ptr<ReconnectPacing> reconnect_pacing;  // the agent's one (--api-reconnect-spread); none: off
};

// "nvdra-agent/<version>".
std::string default_user_agent();

Result<ClientConfig> load_kubeconfig(const std::string& path);

struct InClusterSource {
  std::map<std::string, std::string> env;  // KUBERNETES_SERVICE_HOST, KUBERNETES_SERVICE_PORT
  std::string token_file = "/var/run/secrets/kubernetes.io/serviceaccount/token";
  std::string ca_file = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt";
};
// The real process environment and service-account paths.
InClusterSource in_cluster_from_environment();
Result<ClientConfig> load_in_cluster(const InClusterSource& source);

// --kubeconfig when given, else in-cluster; qps/burst from the agent's options.
Result<ClientConfig> load_client_config(const std::string& kubeconfig_path, double qps, int burst);

}  // namespace nvdra::k8s
