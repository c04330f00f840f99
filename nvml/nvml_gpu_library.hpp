#pragma once
// The real GpuLibrary: NVML reached through dlopen (private to nvml/; use open_nvml()).
#include <string>

#include "nvml/gpu_library.hpp"
#include "nvml/nvml_symbols.hpp"

namespace nvdra::nvml {

class NvmlGpuLibrary final : public GpuLibrary {
 public:
  // Takes ownership of the dlopen handle and of one successful nvmlInit.
  NvmlGpuLibrary(void* dl, std::string path, NvmlSymbols symbols);
  ~NvmlGpuLibrary() override;
  NvmlGpuLibrary(const NvmlGpuLibrary&) = delete;
  NvmlGpuLibrary& operator=(const NvmlGpuLibrary&) = delete;

  Result<SystemInfo> system_info() override;
  Result<unsigned> gpu_count() override;
  Result<GpuInfo> gpu(unsigned index) override;
  Result<std::vector<MigProfileInfo>> mig_profiles(const std::string& gpu_uuid) override;
  Result<std::vector<MigDeviceInfo>> mig_devices(const std::string& gpu_uuid) override;
  Result<std::optional<FabricInfo>> fabric(const std::string& gpu_uuid) override;
  Result<MigModeState> mig_mode(const std::string& gpu_uuid) override;
  Result<MigModeChange> set_mig_mode(const std::string& gpu_uuid, bool enable) override;
  Result<MigDeviceInfo> create_mig_device(const std::string& gpu_uuid, const MigDeviceRequest& request) override;
  Status destroy_mig_device(const std::string& gpu_uuid, unsigned gi_id, unsigned ci_id) override;
  Result<std::vector<BareGpuInstance>> bare_gpu_instances(const std::string& gpu_uuid) override;
  Status destroy_gpu_instance(const std::string& gpu_uuid, unsigned gi_id) override;
  Result<std::unique_ptr<EventWatch>> watch_events(const std::vector<std::string>& gpu_uuids,
                                                   uint64_t event_types) override;
  Result<std::optional<unsigned>> recovery_action(const std::string& gpu_uuid) override;
  Result<CallGate::Shut> release_gpus(const std::string& why) override;
  Status enable_persistence(const std::string& gpu_uuid) override;
  std::string describe() const override;

  // "<call>(<subject>): <nvmlErrorString>" with the ErrorCode the seam header documents.
  Error error(const char* call, nvmlReturn_t rc, const std::string& subject) const;
  Result<nvmlDevice_t> handle(const std::string& uuid) const;
  const NvmlSymbols& symbols() const { return s_; }

 private:
  Result<std::optional<FabricInfo>> fabric_of(nvmlDevice_t dev, const std::string& uuid);
  Result<MigDeviceInfo> read_mig_device(nvmlDevice_t parent, const GpuInfo& parent_info, nvmlDevice_t mig,
                                        const std::vector<MigProfileInfo>& profiles);
  bool mig_supported() const;
  // Whether `gi` holds at least one compute instance (of any CI profile).
  Result<bool> has_compute_instance(nvmlGpuInstance_t gi, const std::string& subject);

  void* dl_;
  std::string path_;
  NvmlSymbols s_;
  CallGate gate_;  // every call that looks up a GPU passes it; release_gpus shuts it
};

// The EventWatch over an nvmlEventSet_t (nvml_event_watch.cpp).
Result<std::unique_ptr<EventWatch>> make_nvml_event_watch(NvmlGpuLibrary& lib, const std::vector<std::string>& uuids,
                                                          uint64_t event_types);

}  // namespace nvdra::nvml
