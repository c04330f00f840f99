// The API clients' TLS contexts: one per TLS setting while any client holds it.
#include "k8s/tls_context.hpp"

#include <gtest/gtest.h>

namespace nvdra::k8s {
namespace {

ClientConfig config(bool insecure, std::string client_cert = {}) {
  ClientConfig c;
  c.insecure_skip_tls_verify = insecure;
  c.client_cert_pem = std::move(client_cert);
  return c;
}

TEST(TlsContext, ClientsWithTheSameSettingsShareOne) {
  auto a = tls_context_for(config(true));
  auto b = tls_context_for(config(true));
  auto verifying = tls_context_for(config(false));  // the system's CAs
  ASSERT_TRUE(a && b && verifying);
  EXPECT_EQ(a->get(), b->get());
  EXPECT_NE(a->get(), verifying->get());
}

TEST(TlsContext, ANewOneOnceNoClientHoldsTheOld) {
  auto first = tls_context_for(config(true));
  ASSERT_TRUE(first);
  std::weak_ptr<boost::asio::ssl::context> old = *first;
  first = tls_context_for(config(false));  // the only holder lets go
  EXPECT_TRUE(old.expired());
  auto again = tls_context_for(config(true));
  ASSERT_TRUE(again);
  EXPECT_NE(*again, nullptr);
}

TEST(TlsContext, AnUnusableClientCertificateIsRefusedAndNotShared) {
  auto bad = tls_context_for(config(true, "not a certificate"));
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().describe().find("client certificate/key are unusable"), std::string::npos);
}

}  // namespace
}  // namespace nvdra::k8s
