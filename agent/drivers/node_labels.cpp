#include "agent/drivers/node_labels.hpp"

#include <simdjson.h>

#include <boost/json.hpp>

#include "k8s/api_server.hpp"

namespace nvdra::drivers {

NodeLabels::NodeLabels(std::shared_ptr<k8s::ApiServer> api, std::string node)
    : api_(std::move(api)), node_(std::move(node)) {}

boost::asio::awaitable<Status> NodeLabels::load() {
  if (loaded_) co_return Status{};
  k8s::ObjectKey key{"", node_};
  auto got = co_await api_->get(k8s::kNodesV1, key);
  if (!got) {
    auto e = got.error().to_error();
    e.message = "cannot read Node " + node_ + "'s labels: " + e.message;
    co_return e;
  }
  simdjson::ondemand::parser parser;
  simdjson::padded_string padded(*got);
  simdjson::ondemand::document doc;
  simdjson::ondemand::object labels;
  labels_.clear();
  loaded_ = true;
  if (parser.iterate(padded).get(doc) || doc["metadata"]["labels"].get_object().get(labels)) co_return Status{};
  for (auto field : labels) {
    std::string_view k, v;
    if (field.unescaped_key().get(k) || field.value().get_string().get(v)) continue;
    labels_.emplace(std::string(k), std::string(v));
  }
  co_return Status{};
}

std::optional<std::string> NodeLabels::value(const std::string& key) const {
  if (auto it = labels_.find(key); it != labels_.end()) return it->second;
  return std::nullopt;
}

boost::asio::awaitable<Status> NodeLabels::write(std::string key, std::optional<std::string> value) {
  boost::json::object labels;
  labels[key] = value ? boost::json::value(*value) : boost::json::value(nullptr);
  boost::json::object patch{{"metadata", boost::json::object{{"labels", std::move(labels)}}}};
  k8s::ObjectKey node{"", node_};
  std::string body = boost::json::serialize(patch);
  ++writes_;
  auto done = co_await api_->patch(k8s::kNodesV1, node, std::move(body));
  if (!done) {
    auto e = done.error().to_error();
    e.message = "error updating Node " + node_ + " label " + key + ": " + e.message;
    co_return e;
  }
  if (value) labels_[key] = *value;
  else labels_.erase(key);
  co_return Status{};
}

}  // namespace nvdra::drivers
