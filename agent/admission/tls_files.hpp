#pragma once
// The webhook's server certificate and key, read from files (cert-manager's Secret mounted as a
// volume) and read again when either changes: the kubelet swaps the volume's files on renewal
// and the webhook must serve the new certificate without a restart.
//
// Each new connection asks current() (the server does so on a one-thread worker pool, never on the
// io_context: it stats and reads files); it stats both files and builds a new context only when their
// identity (inode, size, mtime) changed. A pair that does not load (half-written, key not matching)
// keeps the last good context and is retried on the next connection. Not thread-safe: call it from one
// thread; the counters may be read from any.
#include <boost/asio/ssl/context.hpp>

#include <atomic>
#include <memory>
#include <string>

#include "agent/base/result.hpp"

namespace nvdra::admission {

class TlsFiles {
 public:
  TlsFiles(std::string cert_file, std::string key_file);

  // Loads the pair now; an error names the file and OpenSSL's reason (start-up fails on it).
  Status load();
  // The context for a new connection: a fresh one when the files changed and load, else the last.
  std::shared_ptr<boost::asio::ssl::context> current();

  std::size_t reloads() const { return reloads_.load(); }  // successful loads after the first
  std::size_t reload_failures() const { return failures_.load(); }

 private:
  std::string signature() const;
  Result<std::shared_ptr<boost::asio::ssl::context>> make_context() const;

  std::string cert_file_, key_file_;
  std::string loaded_signature_;
  std::string failed_signature_;
  std::shared_ptr<boost::asio::ssl::context> context_;
  std::atomic<std::size_t> reloads_ = 0, failures_ = 0;
};

}  // namespace nvdra::admission
