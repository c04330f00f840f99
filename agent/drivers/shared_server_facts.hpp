#pragma once
// SharedServerFacts — one k8s::ServerFacts for every driver's slice publisher. The drivers start
// together and ask the same server the same questions (/version, the Node, the OpenAPI document):
// asked once, answered to both. Made with the API client of the first driver that asks.
// io_context thread only.
#include <boost/asio/any_io_executor.hpp>

#include <chrono>
#include <memory>
#include <string>

#include "k8s/server_facts.hpp"

namespace nvdra::drivers {

class SharedServerFacts {
 public:
  // The drivers start within milliseconds of each other; a publisher restarted later (perhaps
  // after a server upgrade) asks again.
  static constexpr std::chrono::seconds kReuseFor{10};

  explicit SharedServerFacts(std::string node_name) : node_name_(std::move(node_name)) {}

  std::shared_ptr<k8s::ServerFacts> get(boost::asio::any_io_executor ex, std::shared_ptr<k8s::ApiServer> api) {
    if (!facts_) {
      facts_ = std::make_shared<k8s::ServerFacts>(std::move(ex), std::move(api),
                                                  k8s::ServerFactsOptions{.node_name = node_name_, .reuse_for = kReuseFor});
    }
    return facts_;
  }

 private:
  std::string node_name_;
  std::shared_ptr<k8s::ServerFacts> facts_;
};

}  // namespace nvdra::drivers
