#include "agent/drivers/backend_factory.hpp"

#include "agent/drivers/gpu_backend.hpp"
#include "agent/kubelet/no_devices_claim_handler.hpp"

namespace nvdra::drivers {

namespace {

// compute-domain.nvidia.com until its HostManagedIMEX backend lands: serves kubelet, publishes
// nothing, and every prepare says that no devices are prepared by this build.
class EmptyBackend final : public DriverBackend {
 public:
  explicit EmptyBackend(std::string driver) : claims_(std::move(driver)) {}
  boost::asio::awaitable<Status> start(std::shared_ptr<k8s::ApiServer>) override { co_return Status{}; }
  kubelet::ClaimHandler& claims() override { return claims_; }
  boost::asio::awaitable<Result<DriverResources>> resources() override { co_return DriverResources{}; }

 private:
  kubelet::NoDevicesClaimHandler claims_;
};

}  // namespace

std::unique_ptr<DriverBackend> make_backend(config::DriverKind kind, RunContext& ctx) {
  if (kind == config::DriverKind::kGpu) return std::make_unique<GpuBackend>(ctx);
  return std::make_unique<EmptyBackend>(config::driver_name(kind));
}

}  // namespace nvdra::drivers
