#include "bench/kubelet/start_floor_reads.hpp"

// Debian ships Boost.JSON's compiled part as a library too; compiled in here like Boost.URL in the floor,
// so no library more is loaded at exec.
#include <boost/json/src.hpp>

namespace start_floor {

const bool kReads = true;

std::string node_uid(const std::string& node_json) {
  return std::string(boost::json::parse(node_json).at("metadata").at("uid").as_string());
}

std::string owned_by(const std::string& body, const std::string& uid) {
  auto slice = boost::json::parse(body);
  for (auto& ref : slice.at("metadata").at("ownerReferences").as_array()) ref.as_object()["uid"] = uid;
  return boost::json::serialize(slice);
}

}  // namespace start_floor
