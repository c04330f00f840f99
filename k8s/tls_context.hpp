#pragma once
// The TLS client context of the API clients. Clients with the same TLS settings (the agent has two
// per driver: writes and claim reads) share one: making one costs the first OpenSSL setup or a
// fresh CA store each time, and a configured context is safe to share between connections on any
// thread. Internal to HttpsTransport.
#include <boost/asio/ssl/context.hpp>

#include <memory>

#include "agent/base/result.hpp"
#include "k8s/client_config.hpp"

namespace nvdra::k8s {

// The context for `config`'s CA, client certificate and insecure flag: the one already made for
// the same settings while any client still holds it, else a new one.
Result<std::shared_ptr<boost::asio::ssl::context>> tls_context_for(const ClientConfig& config);

}  // namespace nvdra::k8s
