#include "agent/drivers/domain_cache.hpp"

#include <simdjson.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "agent/base/log.hpp"
#include "imex/driver_managed.hpp"
#include "k8s/api_server.hpp"
#include "k8s/cancellation.hpp"
#include "k8s/change_signal.hpp"
#include "k8s/reflector.hpp"

namespace nvdra::drivers {

namespace asio = boost::asio;

namespace {

const k8s::ResourceType kCliques{"/apis/resource.nvidia.com/v1beta1", "computedomaincliques", true};

std::string text(simdjson::ondemand::object& o, std::string_view key) {
  std::string_view v;
  if (o.find_field_unordered(key).get(v)) return {};
  return std::string(v);
}

// Entries of a list of objects: name under `name_key`, `status`.
std::vector<DomainNode> nodes_of(simdjson::ondemand::array list, std::string_view name_key) {
  std::vector<DomainNode> out;
  for (auto item : list) {
    simdjson::ondemand::object o;
    if (item.get(o)) continue;
    DomainNode n;
    n.name = text(o, name_key);
    n.status = text(o, "status");
    out.push_back(std::move(n));
  }
  return out;
}

const DomainNode* find_node(const std::vector<DomainNode>& nodes, const std::string& node) {
  for (const auto& n : nodes)
    if (n.name == node) return &n;
  return nullptr;
}

std::map<std::string, std::string> jsons(const k8s::Reflector& r) {
  std::map<std::string, std::string> out;
  for (const auto& [key, entry] : r.objects()) out.emplace(key, entry.json);
  return out;
}

}  // namespace

static std::string selector_of(const std::string& clique_id) {
  return std::string(imex::kCliqueObjectLabel) + "=" + clique_id;
}

ComputeDomainCache::ComputeDomainCache(asio::any_io_executor ex, std::shared_ptr<k8s::ApiServer> api,
                                       std::string driver_ns, std::string node, std::string clique_id)
    : ex_(std::move(ex)), api_(std::move(api)), driver_ns_(std::move(driver_ns)), node_(std::move(node)),
      clique_selector_(selector_of(clique_id)), reselect_(std::make_unique<k8s::ChangeSignal>(ex_)) {}

void ComputeDomainCache::select_clique(std::string clique_id) {
  auto selector = selector_of(clique_id);
  if (selector == clique_selector_) return;
  clique_selector_ = std::move(selector);
  reselect_->notify();
}

ComputeDomainCache::~ComputeDomainCache() = default;

void ComputeDomainCache::start() {
  if (started_) return;
  started_ = true;
  asio::co_spawn(ex_, [self = shared_from_this()]() -> asio::awaitable<void> { co_await self->run(); },
                 asio::bind_cancellation_slot(stop_.slot(), asio::detached));
}

void ComputeDomainCache::stop() {
  // The callbacks' targets go with the owner: nothing may reach them once it stops the cache.
  on_gone_ = nullptr;
  on_synced_ = nullptr;
  if (started_) stop_.emit(asio::cancellation_type::terminal);
  started_ = false;
}

asio::awaitable<void> ComputeDomainCache::run() {
  using namespace asio::experimental::awaitable_operators;
  k8s::ChangeSignal domains_changed(ex_);
  k8s::ReflectorOptions all_namespaces;
  k8s::Reflector domains(ex_, api_, k8s::kComputeDomainsV1beta1, all_namespaces, &domains_changed);
  co_await (domains.run() || follow(domains_changed, domains, false) || run_cliques());
}

// One reflector per selection: a changed clique ends it (the old clique's objects stay until the new
// list replaces them) and the next lists what the new selector names.
asio::awaitable<void> ComputeDomainCache::run_cliques() {
  using namespace asio::experimental::awaitable_operators;
  for (;;) {
    k8s::ChangeSignal changed(ex_);
    k8s::ReflectorOptions options;
    options.ns = driver_ns_;
    options.label_selector = clique_selector_;
    k8s::Reflector cliques(ex_, api_, kCliques, options, &changed);
    nvdra::logger("compute-domain")->debug("watching ComputeDomainCliques in {} selected by {}", driver_ns_,
                                           clique_selector_);
    co_await (cliques.run() || follow(changed, cliques, true) || reselected(options.label_selector));
  }
}

// Returns once select_clique() has chosen another selection than `current`.
asio::awaitable<void> ComputeDomainCache::reselected(std::string current) {
  while (clique_selector_ == current) co_await reselect_->wait();
}

asio::awaitable<void> ComputeDomainCache::follow(k8s::ChangeSignal& signal, k8s::Reflector& r, bool cliques) {
  for (;;) {
    co_await signal.wait();
    if (!r.synced()) continue;
    const auto objects = jsons(r);
    const bool was_synced = synced();
    if (cliques) {
      rebuild_cliques(objects);
      cliques_synced_ = true;
    } else {
      rebuild_domains(objects);
      domains_synced_ = true;
    }
    if (!was_synced && synced() && on_synced_) on_synced_();
    wake();
  }
}

void ComputeDomainCache::rebuild_domains(const std::map<std::string, std::string>& objects) {
  std::map<std::string, DomainInfo> fresh;
  simdjson::ondemand::parser parser;
  for (const auto& [key, json] : objects) {
    simdjson::padded_string padded(json);
    simdjson::ondemand::document doc;
    simdjson::ondemand::object root, meta;
    if (parser.iterate(padded).get(doc) || doc.get_object().get(root)) continue;
    if (root.find_field_unordered("metadata").get_object().get(meta)) continue;
    DomainInfo d;
    d.uid = text(meta, "uid");
    d.name = text(meta, "name");
    d.ns = text(meta, "namespace");
    simdjson::ondemand::object status;
    simdjson::ondemand::array nodes;
    if (!root.find_field_unordered("status").get_object().get(status) &&
        !status.find_field_unordered("nodes").get_array().get(nodes))
      d.nodes = nodes_of(nodes, "name");
    if (!d.uid.empty()) fresh.emplace(d.uid, std::move(d));
  }
  std::vector<std::string> gone;
  for (const auto& [uid, d] : domains_)
    if (!fresh.count(uid)) gone.push_back(uid);
  domains_ = std::move(fresh);
  if (on_gone_)
    for (const auto& uid : gone) on_gone_(uid);
}

void ComputeDomainCache::rebuild_cliques(const std::map<std::string, std::string>& objects) {
  std::map<std::string, std::vector<DomainNode>> fresh;
  simdjson::ondemand::parser parser;
  for (const auto& [key, json] : objects) {
    simdjson::padded_string padded(json);
    simdjson::ondemand::document doc;
    simdjson::ondemand::object root;
    if (parser.iterate(padded).get(doc) || doc.get_object().get(root)) continue;
    // Field order in the object is the server's: read metadata and daemons in either order.
    std::string name;
    std::vector<DomainNode> daemons;
    for (auto field : root) {
      std::string_view k;
      if (field.unescaped_key().get(k)) break;
      simdjson::ondemand::object m;
      simdjson::ondemand::array a;
      if (k == "metadata" && !field.value().get_object().get(m)) name = text(m, "name");
      else if (k == "daemons" && !field.value().get_array().get(a)) daemons = nodes_of(a, "nodeName");
    }
    if (!name.empty()) fresh.emplace(std::move(name), std::move(daemons));
  }
  cliques_ = std::move(fresh);
}

void ComputeDomainCache::wake() {
  ++stats_.changes;
  for (auto* t : waiters_) t->cancel();
}

asio::awaitable<void> ComputeDomainCache::wait_change(std::chrono::steady_clock::time_point deadline) {
  asio::steady_timer timer(ex_, deadline);
  auto it = waiters_.insert(waiters_.end(), &timer);
  co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
  waiters_.erase(it);
  co_await k8s::throw_if_cancelled();
}

std::optional<DomainInfo> ComputeDomainCache::domain(const std::string& uid) const {
  if (auto it = domains_.find(uid); it != domains_.end()) return it->second;
  return std::nullopt;
}

DomainReadiness ComputeDomainCache::readiness(const std::string& uid, const std::string& clique_id,
                                              bool use_cliques) const {
  std::string detail;
  if (use_cliques) {
    const std::string name = uid + "." + clique_id;
    const std::string where = "ComputeDomainClique " + driver_ns_ + "/" + name;
    auto it = cliques_.find(name);
    const DomainNode* n = it == cliques_.end() ? nullptr : find_node(it->second, node_);
    if (n && n->status == "Ready") return {true, where + " lists node " + node_ + " Ready"};
    detail = it == cliques_.end() ? where + " does not exist"
             : n ? where + " lists node " + node_ + " as " + (n->status.empty() ? "NotReady" : n->status)
                 : where + " does not list node " + node_;
  }
  auto d = domains_.find(uid);
  const DomainNode* n = d == domains_.end() ? nullptr : find_node(d->second.nodes, node_);
  if (n && n->status == "Ready") return {true, "ComputeDomain status.nodes lists node " + node_ + " Ready"};
  const std::string cd = d == domains_.end() ? "ComputeDomain " + uid : "ComputeDomain " + d->second.ns + "/" +
                                                                           d->second.name + " (" + uid + ")";
  const std::string from_cd = n ? cd + " status.nodes lists node " + node_ + " as " +
                                      (n->status.empty() ? "NotReady" : n->status)
                                : cd + " status.nodes does not list node " + node_;
  return {false, detail.empty() ? from_cd : detail + "; " + from_cd};
}

}  // namespace nvdra::drivers
