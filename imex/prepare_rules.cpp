#include "imex/prepare_rules.hpp"

namespace nvdra::imex {

Status check_result_count(std::size_t results) {
  if (results == 1) return {};
  return make_error(ErrorCode::kInvalidArgument,
                    "a compute-domain channel claim must have exactly one allocation result for "
                    "compute-domain.nvidia.com, this one has " + std::to_string(results) + kPermanent);
}

Status check_allocation_mode(const std::string& mode) {
  if (mode.empty() || mode == "Single") return {};
  Error e = make_error(ErrorCode::kInvalidArgument,
                       "allocationMode \"" + mode + "\" is not supported under HostManagedIMEX: allowed values are "
                       "\"\" and \"Single\" (one IMEX channel, channel 0, per node); set allocationMode: Single "
                       "in the ComputeDomain" + kPermanent);
  e.field = "allocationMode";
  return e;
}

Status check_clique(const std::string& clique_id) {
  if (!clique_id.empty()) return {};
  return make_error(ErrorCode::kFailedPrecondition,
                    "host-managed IMEX requires an NVLink clique on this node; NVML reports none (no GPU of this "
                    "node has a fabric clique ID): run IMEX workloads only on multi-node NVLink nodes" +
                        std::string(kPermanent));
}

Error daemon_claim_error(const std::string& what) {
  return make_error(ErrorCode::kInvalidArgument,
                    what + ": daemon claims are disabled under HostManagedIMEX (the host's nvidia-imex.service is "
                    "the IMEX daemon; no daemon devices are published)" + kPermanent);
}

Error channel_conflict_error(const std::string& other_claim) {
  return make_error(ErrorCode::kFailedPrecondition,
                    "channel 0 already allocated by claim " + other_claim +
                        " (according to checkpoint): one prepared channel claim per node under HostManagedIMEX");
}

Error driver_managed_error() {
  return make_error(ErrorCode::kFailedPrecondition,
                    "driver-managed IMEX is not provided by this process: nvdra serves compute-domain channel "
                    "claims only with the HostManagedIMEX feature gate (--feature-gates=HostManagedIMEX=true) and "
                    "the host's nvidia-imex.service; for driver-managed ComputeDomains run upstream's "
                    "compute-domain-kubelet-plugin and controller instead" + std::string(kPermanent));
}

}  // namespace nvdra::imex
