#include "agent/drivers/served_fields_file.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "agent/base/bounded_read.hpp"
#include "agent/base/log.hpp"
#include "agent/config/options.hpp"
#include "agent/runtime/worker_pool.hpp"
#include "k8s/served_fields_codec.hpp"

namespace nvdra::drivers {
namespace fs = std::filesystem;

namespace {

constexpr std::size_t kMaxBytes = 64 * 1024;  // a few hundred bytes written; anything larger is not ours

std::optional<k8s::ServedFieldsEntry> read_entry(const std::string& path) {
  auto text = read_bounded(path, kMaxBytes, "the served-fields cache");
  if (!text) return std::nullopt;  // missing or too large: a miss
  return k8s::decode_served_fields(*text);
}

// Written aside and renamed over: a reader sees the old entry or the new one. No fsync: a cache.
bool write_entry(const std::string& path, const k8s::ServedFieldsEntry& entry, std::string& why) {
  const std::string temp = path + ".tmp";
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    out << k8s::encode_served_fields(entry);
    if (!out.flush()) {
      why = "cannot write " + temp;
      return false;
    }
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    why = "cannot rename " + temp + " to " + path + ": " + std::strerror(errno);
    std::remove(temp.c_str());
    return false;
  }
  return true;
}

}  // namespace

std::string ServedFieldsFile::path_for(const config::Options& options) {
  const auto first = options.driver_enabled(config::DriverKind::kGpu) ? config::DriverKind::kGpu
                                                                      : config::DriverKind::kComputeDomain;
  return (fs::path(options.kubelet_plugins_dir) / config::driver_name(first) / kFileName).string();
}

boost::asio::awaitable<std::optional<k8s::ServedFields>> ServedFieldsFile::load(std::string document_path) {
  auto entry = co_await workers_.run([path = path_] { return read_entry(path); });
  if (!entry || entry->document_path != document_path) co_return std::nullopt;
  nvdra::logger("k8s")->debug("served fields of {} from {}", document_path, path_);
  co_return entry->fields;
}

boost::asio::awaitable<void> ServedFieldsFile::store(std::string document_path, k8s::ServedFields fields) {
  k8s::ServedFieldsEntry entry{std::move(document_path), fields};
  std::string why;
  const bool ok = co_await workers_.run([&] { return write_entry(path_, entry, why); });
  if (!ok) nvdra::logger("k8s")->debug("served fields not kept ({}): the next start reads the document", why);
}

}  // namespace nvdra::drivers
