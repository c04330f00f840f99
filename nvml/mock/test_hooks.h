/* Test hooks the mock libnvidia-ml.so.1 exports beside NVML's symbols, so a test (or the
 * nvml-mock-ctl tool) can change the "hardware" between NVML calls. They take effect in every
 * process that loads the same profile, because they act on its state file. Each works with or
 * without a prior nvmlInit and returns an nvmlReturn_t value. C ABI; resolve them with dlsym. */
#ifndef NVDRA_NVML_MOCK_TEST_HOOKS_H
#define NVDRA_NVML_MOCK_TEST_HOOKS_H
#ifdef __cplusplus
extern "C" {
#endif

/* Queues an event for the GPU (or MIG device: its parent, GI and CI) named by `uuid`. For XIDs:
 * event_type 0x8 (nvmlEventTypeXidCriticalError), event_data the XID. gi/ci 0xFFFFFFFF unless the
 * event is attributable to one MIG instance; a MIG UUID fills them in. */
int nvdraMockInjectEvent(const char* uuid, unsigned long long event_type, unsigned long long event_data,
                         unsigned int gpu_instance_id, unsigned int compute_instance_id);
/* Marks a GPU lost (every call on it then returns NVML_ERROR_GPU_IS_LOST) or found again. */
int nvdraMockSetGpuLost(const char* uuid, int lost);
/* Sets what NVML_FI_DEV_GET_GPU_RECOVERY_ACTION reads for a GPU (0 none, 1 GPU reset, 2 node
 * reboot, 3 drain P2P, 4 drain and reset), as the driver sets it after an XID and clears it once
 * the action has been taken. */
int nvdraMockSetRecoveryAction(const char* uuid, unsigned int action);
/* supported 0: the GPU refuses event registration (nvmlDeviceRegisterEvents NOT_SUPPORTED, as on
 * GPUs too old for events); 1 restores the profile's behaviour. Affects later registrations. */
int nvdraMockSetEventsSupported(const char* uuid, int supported);
/* Sets the GPU's NVLink fabric state as nvmlDeviceGetGpuFabricInfo[V] report it (nvmlGpuFabricState_t:
 * 1 NOT_STARTED, 2 IN_PROGRESS, 3 COMPLETED), e.g. 2 then 3 for a fabric still registering at start
 * that finishes later; a negative state restores the profile's. NOT_SUPPORTED GPUs stay so. */
int nvdraMockSetFabricState(const char* uuid, int state);
/* Sets the GPU's NVLink clique id as nvmlDeviceGetGpuFabricInfo[V] report it (a fabric that registered
 * again in another clique); a negative id restores the profile's. NOT_SUPPORTED GPUs stay so. */
int nvdraMockSetFabricClique(const char* uuid, long long clique_id);
/* Makes the next `count` calls of the NVML function named `function` (on any device) fail with
 * `rc` and change nothing, e.g. ("nvmlDeviceCreateGpuInstanceWithPlacement", 23 INSUFFICIENT_RESOURCES,
 * 1) or ("nvmlComputeInstanceDestroy", 19 IN_USE, 2) for a GPU busy with processes. Honoured by
 * nvmlDeviceSetMigMode, nvmlDeviceCreateGpuInstance[WithPlacement], nvmlGpuInstanceDestroy,
 * nvmlGpuInstanceCreateComputeInstance[WithPlacement] and nvmlComputeInstanceDestroy. count 0
 * clears what was queued for the function. Queuing both nvmlGpuInstanceCreateComputeInstance and
 * nvmlGpuInstanceDestroy makes a create-then-clean-up client leave a GPU instance without compute
 * instance behind, as an agent killed between the two create calls does. */
int nvdraMockFailNext(const char* function, int rc, unsigned int count);
/* Returns the machine to the profile's boot state: MIG layout, modes, no events, nothing lost. */
int nvdraMockResetState(void);
/* The reason of the last failed nvmlInit in this process (names the profile file, GPU and
 * field), or "" — valid until the next call from the same thread. */
const char* nvdraMockLastError(void);
/* The state file this process uses (after a successful init), or "". */
const char* nvdraMockStatePath(void);

#ifdef __cplusplus
}
#endif
#endif
