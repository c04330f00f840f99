#include "k8s/tls_context.hpp"

#include <map>
#include <mutex>
#include <string>
#include <tuple>

namespace nvdra::k8s {

namespace ssl = boost::asio::ssl;

namespace {

Result<std::shared_ptr<ssl::context>> make_context(const ClientConfig& cfg) {
  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_client);
  boost::system::error_code ec;
  ctx->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 | ssl::context::no_sslv3 |
                   ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
  // An idle connection (a watch between events, a pooled one) gives back OpenSSL's ~34 KiB of record
  // buffers instead of holding them: most of an idle agent's connections are idle (issue #16: RSS).
  SSL_CTX_set_mode(ctx->native_handle(), SSL_MODE_RELEASE_BUFFERS);
  if (cfg.insecure_skip_tls_verify) {
    ctx->set_verify_mode(ssl::verify_none);
  } else {
    ctx->set_verify_mode(ssl::verify_peer);
    if (cfg.ca_pem.empty()) {
      ctx->set_default_verify_paths(ec);
    } else {
      ctx->add_certificate_authority(boost::asio::buffer(cfg.ca_pem), ec);
    }
    if (ec) return make_error(ErrorCode::kInvalidArgument, "API server CA bundle is unusable: " + ec.message());
  }
  if (!cfg.client_cert_pem.empty()) {
    ctx->use_certificate_chain(boost::asio::buffer(cfg.client_cert_pem), ec);
    if (!ec) ctx->use_private_key(boost::asio::buffer(cfg.client_key_pem), ssl::context::pem, ec);
    if (ec) return make_error(ErrorCode::kInvalidArgument, "client certificate/key are unusable: " + ec.message());
  }
  return ctx;
}

}  // namespace

Result<std::shared_ptr<ssl::context>> tls_context_for(const ClientConfig& cfg) {
  using Key = std::tuple<bool, std::string, std::string, std::string>;
  static std::mutex mu;
  static std::map<Key, std::weak_ptr<ssl::context>> made;
  Key key{cfg.insecure_skip_tls_verify, cfg.ca_pem, cfg.client_cert_pem, cfg.client_key_pem};
  std::lock_guard lock(mu);
  if (auto it = made.find(key); it != made.end())
    if (auto ctx = it->second.lock()) return ctx;
  auto ctx = make_context(cfg);
  if (!ctx) return ctx;
  std::erase_if(made, [](const auto& entry) { return entry.second.expired(); });
  made[key] = *ctx;
  return ctx;
}

}  // namespace nvdra::k8s
