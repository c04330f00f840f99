#include "agent/drivers/mode_change_cleanup.hpp"

#include "agent/base/log.hpp"
#include "agent/drivers/domain_groups.hpp"
#include "agent/drivers/node_labels.hpp"
#include "imex/driver_managed.hpp"

namespace nvdra::drivers {

ModeChangeCleanup::ModeChangeCleanup(kubelet::ClaimHandler& inner, claims::CheckpointCommitter& committer,
                                     std::shared_ptr<NodeLabels> labels)
    : inner_(inner), committer_(committer), labels_(std::move(labels)) {}

boost::asio::awaitable<Result<std::vector<kubelet::PreparedDevice>>> ModeChangeCleanup::prepare(
    kubelet::ClaimRef claim) {
  co_return co_await inner_.prepare(std::move(claim));
}

boost::asio::awaitable<Status> ModeChangeCleanup::unprepare(kubelet::ClaimRef claim) {
  const auto& claims = committer_.current().claims;
  std::string domain;
  if (auto it = claims.find(claim.uid); it != claims.end())
    if (auto entry = decode_domain_groups(it->second.prepared_devices, claim.describe());
        entry && entry->kind == DomainDeviceKind::kChannel)
      domain = entry->domain;
  if (!domain.empty()) {
    if (auto st = co_await labels_->load(); !st) co_return st;
    const std::string key(imex::kDomainLabel);
    if (labels_->value(key) == domain) {
      if (auto st = co_await labels_->write(key, std::nullopt); !st) co_return st;
      nvdra::logger("compute-domain")
          ->info("claim={} prepared in driver-managed mode: removed node label {}={}", claim.describe(), key, domain);
    }
  }
  co_return co_await inner_.unprepare(std::move(claim));
}

}  // namespace nvdra::drivers
