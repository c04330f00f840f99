#include <stdexcept>

#include "bench/kubelet/start_floor_reads.hpp"

// The plain floor: --reads-node is refused at parse (kReads), so these are never reached.
namespace start_floor {

const bool kReads = false;

std::string node_uid(const std::string&) { throw std::logic_error("kubelet_start_floor makes no reads"); }
std::string owned_by(const std::string&, const std::string&) {
  throw std::logic_error("kubelet_start_floor makes no reads");
}

}  // namespace start_floor
