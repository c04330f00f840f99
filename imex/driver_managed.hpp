#pragma once
// Pure pieces of driver-managed IMEX (upstream's default --imex-mode=driverManaged, upstream-driver.md
// §9.1–§9.4): the driver-version floor of gate IMEXDaemonsWithDNSNames, the IMEX daemon config template
// a daemon claim's domain directory receives, the node labels, and upstream's error wording.
#include <string>
#include <string_view>

#include "agent/base/result.hpp"

namespace nvdra::imex {

// Node label naming the ComputeDomain whose channel is prepared here (the daemon DaemonSet's nodeSelector).
inline constexpr std::string_view kDomainLabel = "resource.nvidia.com/computeDomain";
// Node label with this node's clique id (--gpu-clique-label-enabled).
inline constexpr std::string_view kCliqueLabel = "nvidia.com/gpu.clique";
// On ComputeDomainClique objects (upstream's daemon creates each with it and kDomainLabel): the clique
// id, so a node's watch can select the cliques of its own clique.
inline constexpr std::string_view kCliqueObjectLabel = "resource.nvidia.com/computeDomain.cliqueID";
// In the daemon container: where the domain directory is mounted, and the template's file name.
inline constexpr std::string_view kDaemonTemplateFile = "imexd.cfg.tmpl";
inline constexpr std::string_view kDnsNamesMinDriver = "570.158.01";

// Driver-managed mode with gate IMEXDaemonsWithDNSNames: the driver must be >= 570.158.01 (k8s
// version.ParseGeneric ordering). Upstream's words, with both versions.
Status check_dns_names_driver(std::string_view found);

// The IMEX daemon config template, key=value lines in upstream's order (§9.4); the daemon renders
// the two {{ }} fields itself.
std::string daemon_config_template();

// Upstream's errors (wording kept: tools and runbooks match on them).
Error label_conflict_error(const std::string& holder, const std::string& wanted);
// Retryable: the node's IMEX daemon is not Ready yet. `where` says what was looked at and what it showed.
Error not_ready_error(const std::string& where);

}  // namespace nvdra::imex
