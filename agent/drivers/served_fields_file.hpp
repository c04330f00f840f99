#pragma once
// ServedFieldsFile — the agent's ServedFieldsCache (k8s/served_fields_cache.hpp): one small JSON
// file in the data directory of the first driver the agent runs
// (<kubelet plugins dir>/gpu.nvidia.com/nvdra-served-fields.json), so a restarted agent publishes
// without fetching the API server's OpenAPI document again while its hash is unchanged. Upstream
// ignores the file. Read and written on the worker pool; a missing, unreadable or foreign file is a
// miss, a failed write a debug line (the next start reads the document). io_context thread only.
#include <boost/asio/awaitable.hpp>

#include <optional>
#include <string>

#include "k8s/served_fields_cache.hpp"

namespace nvdra::config { struct Options; }
namespace nvdra::runtime { class WorkerPool; }

namespace nvdra::drivers {

class ServedFieldsFile final : public k8s::ServedFieldsCache {
 public:
  static constexpr const char* kFileName = "nvdra-served-fields.json";

  ServedFieldsFile(runtime::WorkerPool& workers, std::string path) : workers_(workers), path_(std::move(path)) {}
  // Where the agent keeps it: the first enabled driver's plugin data directory.
  static std::string path_for(const config::Options& options);

  boost::asio::awaitable<std::optional<k8s::ServedFields>> load(std::string document_path) override;
  boost::asio::awaitable<void> store(std::string document_path, k8s::ServedFields fields) override;
  const std::string& path() const { return path_; }

 private:
  runtime::WorkerPool& workers_;
  std::string path_;
};

}  // namespace nvdra::drivers
