#pragma once
// SharedServerFacts — what every driver's slice publisher shares: one k8s::ServerFacts (the drivers
// start together and ask the same server the same questions: /version, the Node, the OpenAPI
// document; asked once, answered to both) and one watch of the node's ResourceSlices (one watch
// held per node, not one per driver). Each is made with the API client of the first driver that asks.
// io_context thread only.
#include <boost/asio/any_io_executor.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "k8s/server_facts.hpp"
#include "k8s/slice_watch.hpp"

namespace nvdra::drivers {

class SharedServerFacts {
 public:
  // The drivers start within milliseconds of each other; a publisher restarted later (perhaps
  // after a server upgrade) asks again.
  static constexpr std::chrono::seconds kReuseFor{10};

  // `served_cache`: where the OpenAPI document's fields are kept between lookups and starts.
  // `slice_watch_after`: awaited between the slices' first LIST and their WATCH (unset: none).
  explicit SharedServerFacts(std::string node_name, std::shared_ptr<k8s::ServedFieldsCache> served_cache = nullptr,
                             std::function<boost::asio::awaitable<void>()> slice_watch_after = {})
      : node_name_(std::move(node_name)),
        served_cache_(std::move(served_cache)),
        slice_watch_after_(std::move(slice_watch_after)) {}

  std::shared_ptr<k8s::ServerFacts> get(boost::asio::any_io_executor ex, std::shared_ptr<k8s::ApiServer> api) {
    if (!facts_) {
      facts_ = std::make_shared<k8s::ServerFacts>(std::move(ex), std::move(api),
                                                  k8s::ServerFactsOptions{.node_name = node_name_, .reuse_for = kReuseFor,
                                                                          .served_cache = served_cache_});
    }
    return facts_;
  }

  std::shared_ptr<k8s::SliceWatch> slices(boost::asio::any_io_executor ex, std::shared_ptr<k8s::ApiServer> api) {
    if (!slices_) {
      k8s::SliceWatchOptions options{node_name_};
      options.before_first_watch = slice_watch_after_;
      slices_ = std::make_shared<k8s::SliceWatch>(std::move(ex), std::move(api), std::move(options));
    }
    return slices_;
  }

 private:
  std::string node_name_;
  std::shared_ptr<k8s::ServedFieldsCache> served_cache_;
  std::function<boost::asio::awaitable<void>()> slice_watch_after_;
  std::shared_ptr<k8s::ServerFacts> facts_;
  std::shared_ptr<k8s::SliceWatch> slices_;
};

}  // namespace nvdra::drivers
