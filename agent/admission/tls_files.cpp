#include "agent/admission/tls_files.hpp"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/stat.h>

#include "agent/base/log.hpp"

namespace nvdra::admission {
namespace {

std::string file_signature(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return "missing";
  return std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino) + ":" + std::to_string(st.st_size) + ":" +
         std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec);
}

}  // namespace

TlsFiles::TlsFiles(std::string cert_file, std::string key_file)
    : cert_file_(std::move(cert_file)), key_file_(std::move(key_file)) {}

std::string TlsFiles::signature() const { return file_signature(cert_file_) + "|" + file_signature(key_file_); }

Result<std::shared_ptr<boost::asio::ssl::context>> TlsFiles::make_context() const {
  namespace ssl = boost::asio::ssl;
  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_server);
  // TLS 1.2 and 1.3 only (the API server speaks both); no renegotiation, no compression.
  SSL_CTX_set_min_proto_version(ctx->native_handle(), TLS1_2_VERSION);
  ctx->set_options(ssl::context::default_workarounds | ssl::context::no_compression | SSL_OP_NO_RENEGOTIATION);
  boost::system::error_code ec;
  // The certificate file may hold the chain (cert-manager's tls.crt does), as Go's ListenAndServeTLS.
  ctx->use_certificate_chain_file(cert_file_, ec);
  if (ec) return Error{ErrorCode::kInvalidArgument, "--tls-cert-file=" + cert_file_ + ": " + ec.message()};
  ctx->use_private_key_file(key_file_, ssl::context::pem, ec);
  if (ec) return Error{ErrorCode::kInvalidArgument, "--tls-private-key-file=" + key_file_ + ": " + ec.message()};
  if (SSL_CTX_check_private_key(ctx->native_handle()) != 1) {
    ERR_clear_error();
    return Error{ErrorCode::kInvalidArgument,
                 "--tls-private-key-file=" + key_file_ + ": the key does not match the certificate in " + cert_file_};
  }
  return ctx;
}

Status TlsFiles::load() {
  const auto sig = signature();
  auto ctx = make_context();
  if (!ctx) return ctx.error();
  context_ = std::move(*ctx);
  loaded_signature_ = sig;
  return {};
}

std::shared_ptr<boost::asio::ssl::context> TlsFiles::current() {
  const auto sig = signature();
  if (sig == loaded_signature_ || sig == failed_signature_) return context_;
  auto ctx = make_context();
  if (!ctx) {
    // Kept until the files change again: a half-renewed pair is retried, not logged per connection.
    failed_signature_ = sig;
    ++failures_;
    nvdra::logger("webhook")->warn("certificate not reloaded, serving the previous one: {}", ctx.error().message);
    return context_;
  }
  context_ = std::move(*ctx);
  loaded_signature_ = sig;
  ++reloads_;
  nvdra::logger("webhook")->info("certificate reloaded from {}", cert_file_);
  return context_;
}

}  // namespace nvdra::admission
