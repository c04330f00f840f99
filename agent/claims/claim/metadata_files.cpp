#include "agent/claims/claim/metadata_files.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <boost/json/array.hpp>
#include <boost/json/serialize.hpp>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>

#include "agent/claims/claim/device_metadata.hpp"

namespace nvdra::claims {
namespace json = boost::json;
namespace fs = std::filesystem;

namespace {

Error io_error(const std::string& what, const std::string& path, int err) {
  return make_error(ErrorCode::kInternal, what + " " + path + ": " + std::strerror(err));
}

std::string claim_dir(const std::string& root, const MetadataClaim& claim) {
  return (fs::path(root) / (claim.ns + "_" + claim.name)).string();
}

// The helper's resourceclaim.BaseRequestRef: "main" of "main/sub".
std::string top_level(const std::string& request) { return request.substr(0, request.find('/')); }

Status write_durably(const std::string& path, const std::string& content) {
  const std::string temp = path + ".tmp";
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return io_error("cannot create", temp, errno);
  std::size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return io_error("cannot write", temp, err);
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0) {
    const int err = errno;
    ::close(fd);
    return io_error("cannot fsync", temp, err);
  }
  ::close(fd);
  if (::rename(temp.c_str(), path.c_str()) != 0) return io_error("cannot rename to", path, errno);
  return Status{};
}

}  // namespace

json::object metadata_document(const MetadataClaim& claim, const std::string& request,
                               const std::vector<MetadataDevice>& devices) {
  json::array list;
  for (const auto& d : devices) {
    if (d.request != request) continue;
    json::object device{{"name", d.name}, {"driver", d.driver}, {"pool", d.pool}};
    PublishedDevice attrs;
    attrs.attributes = d.attributes;
    auto md = device_metadata(attrs);  // the same DeviceAttribute encoding as the checkpoint's copy
    if (!d.attributes.empty()) device["attributes"] = md["Attributes"];
    list.emplace_back(std::move(device));
  }
  json::object meta{{"name", claim.name}, {"namespace", claim.ns}, {"uid", claim.uid}, {"generation", claim.generation}};
  json::object doc{{"kind", "DeviceMetadata"}, {"apiVersion", kMetadataApiVersion}, {"metadata", std::move(meta)}};
  if (claim.pod_claim_name) doc["podClaimName"] = *claim.pod_claim_name;
  json::object req{{"name", request}};
  if (!list.empty()) req["devices"] = std::move(list);
  doc["requests"] = json::array{std::move(req)};
  return doc;
}

std::string metadata_host_path(const std::string& root, const MetadataClaim& claim, const std::string& request) {
  return (fs::path(claim_dir(root, claim)) / top_level(request) / "metadata.json").string();
}

std::string metadata_container_path(const std::string& driver, const MetadataClaim& claim, const std::string& request) {
  // As the helper: an empty annotation counts as none for the path (the document still carries it).
  const bool from_template = claim.pod_claim_name && !claim.pod_claim_name->empty();
  return std::string(kMetadataContainerRoot) + (from_template ? "/resourceclaimtemplates/" : "/resourceclaims/") +
         (from_template ? *claim.pod_claim_name : claim.name) + "/" + top_level(request) + "/" + driver +
         "-metadata.json";
}

Result<std::vector<cdi::Mount>> write_metadata_files(const std::string& root, const std::string& driver,
                                                    const MetadataClaim& claim,
                                                    const std::vector<MetadataDevice>& devices) {
  std::set<std::string> requests;
  for (const auto& d : devices) requests.insert(d.request);
  std::map<std::string, std::string> by_file;  // top-level request -> the request as allocated
  for (const auto& request : requests)
    if (auto [it, fresh] = by_file.emplace(top_level(request), request); !fresh)
      return make_error(ErrorCode::kInvalidArgument,
                        "claim " + claim.ns + "/" + claim.name + ": requests " + it->second + " and " + request +
                            " would share the metadata file of request " + it->first +
                            " (an allocation picks one subrequest per request)");
  std::vector<cdi::Mount> mounts;
  for (const auto& request : requests) {
    const auto path = metadata_host_path(root, claim, request);
    std::error_code ec;
    fs::create_directories(fs::path(path).parent_path(), ec);
    if (ec) return io_error("cannot create", fs::path(path).parent_path().string(), ec.value());
    // A JSON stream of one object per API version served, newest first: v1alpha1 only here.
    if (auto st = write_durably(path, json::serialize(metadata_document(claim, request, devices)) + "\n"); !st)
      return st.error();
    mounts.push_back(cdi::Mount{path, metadata_container_path(driver, claim, request), "", {"ro", "bind"}});
  }
  return mounts;
}

Status remove_metadata_files(const std::string& root, const MetadataClaim& claim) {
  std::error_code ec;
  fs::remove_all(claim_dir(root, claim), ec);
  if (ec) return io_error("cannot remove", claim_dir(root, claim), ec.value());
  return Status{};
}

}  // namespace nvdra::claims
