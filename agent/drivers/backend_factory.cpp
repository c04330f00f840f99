#include "agent/drivers/backend_factory.hpp"

#include "agent/drivers/gpu_backend.hpp"
#include "agent/drivers/compute_domain_backend.hpp"

namespace nvdra::drivers {

std::unique_ptr<DriverBackend> make_backend(config::DriverKind kind, RunContext& ctx) {
  if (kind == config::DriverKind::kGpu) return std::make_unique<GpuBackend>(ctx);
  return make_compute_domain_backend(ctx);
}

}  // namespace nvdra::drivers
