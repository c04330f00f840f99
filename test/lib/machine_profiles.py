"""Machine profiles generated for the mock NVML (nvml/mock/machine_profile.hpp), for nodes larger than the
checked-in ones (issue #33): `gpus` H100 80GB with distinct UUIDs, PCI bus ids and minors, MIG enabled or not.
Under DynamicMIG an H100 publishes 26 devices (the GPU and every MIG placement), so 20 GPUs make a
520-device node. With vfio, every GPU also gets its VFIO twin, as the hand-written `passthrough` profile
does: the twins come from the simulated host's PCI tree (test/lib/fake_pci.py, each GPU in an IOMMU group of
its own), which SimulatedNode builds when started with pci=True and the PassthroughSupport gate
(node_kwargs). PassthroughSupport excludes DynamicMIG and NVMLDeviceHealthCheck, so vfio refuses mig.
Written through PyYAML."""
import yaml

PRODUCT = "NVIDIA H100 80GB HBM3"


def gpu_uuid(index):
    return "GPU-5ca1e000-0000-4000-8000-%012x" % index


def _bus(i, vfio):
    """0x10 + i; with vfio past 0x3b, where the fake driver root (test/cdi/fake_driver_root.cpp) keeps a DRM
    fixture in the host's sys/bus/pci/devices that the PCI tree's link for the GPU would collide with."""
    bus = 0x10 + i % 200
    return bus + 1 if vfio and bus >= 0x3b else bus


def write_profile(path, gpus, mig, first_uuid=0, vfio=False):
    """first_uuid: the UUID index of the first GPU (the fleet scenario gives every node GPUs of its own).
    vfio: the GPUs sit on two NUMA nodes as on the passthrough host; start the node with node_kwargs(True)."""
    if vfio and mig:
        raise ValueError("machine profile: vfio=True needs mig=False (PassthroughSupport excludes DynamicMIG)")
    profile = {"driverVersion": "580.105.08", "cudaDriverVersion": 13000, "gpus": [
        {"product": PRODUCT, "uuid": gpu_uuid(first_uuid + i),
         "pciBusId": "0000%04x:%02x:00.0" % (i // 200, _bus(i, vfio)),
         "minor": i, "migMode": "enabled" if mig else "disabled",
         **({"numaNode": 0 if i < (gpus + 1) // 2 else 1} if vfio else {})} for i in range(gpus)]}
    with open(path, "w") as f:
        yaml.safe_dump(profile, f, sort_keys=False)
    return path


def node_kwargs(vfio):
    """SimulatedNode's keywords for a generated profile: with vfio, the PCI tree and PassthroughSupport."""
    return {"pci": True, "gates": "PassthroughSupport=true"} if vfio else {}
