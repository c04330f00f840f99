"""The simulated host's PCI side for PassthroughSupport: a sysfs PCI tree under the host root
(devices, drivers, iommu_groups, driver_override, bind/unbind, drivers_probe) and a small stand-in
for the kernel that reacts to the agent's writes as Linux does.

The files the kernel acts on (drivers/<d>/bind, drivers/<d>/unbind, devices/<bdf>/driver_override,
drivers_probe) are FIFOs; the kernel thread reads them and moves the `driver` links, the drivers'
device links and /dev/vfio/<group>. The mock NVML hides a GPU whose `driver` link is not nvidia.
Writes that arrive together are applied in the kernel's causal order (unbind, override, bind/probe), and a
write's earlier writes are always in its batch: a probe never runs before the override written ahead of it.

    pci = FakePciHost(host_root, "passthrough")
    pci.start()
    pci.slow("0000:18:00.0", 0.5)          # binds of that device take half a second
    pci.hold_unbinds("0000:18:00.0")       # its unbinds wait until pci.finish_unbinds("0000:18:00.0")
    pci.refuse("0000:18:00.0")             # the kernel answers writes to its driver_override with ENXIO
    pci.hold(minor=3, pid=4242, comm="cuda-app")   # a process with /dev/nvidia3 open
    pci.persistenced(driver_root)          # nvidia-persistenced: every GPU open until nvidia-smi -pm 0

An unbind from nvidia while a process of this machine has the host's /dev/nvidia<minor> open (the
mock NVML opens it for the GPUs its session attached) is not done and is listed in `pci.blocked`:
a real kernel's write would hang there.
"""
import os
import select
import threading
import time

import yaml

SOURCE_DIR = os.environ.get("NVDRA_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
PROFILES = os.path.join(SOURCE_DIR, "nvml", "mock", "profiles")

# PCI device ids of the mock catalog's products (nvml/mock/product_catalog.cpp).
DEVICE_IDS = {"NVIDIA A100-SXM4-40GB": 0x20b0, "NVIDIA H100 80GB HBM3": 0x2330, "NVIDIA GB200": 0x2941,
              "NVIDIA L4": 0x27b8}
# What the host's pci.ids says about them (the agent reads <host>/usr/share/misc/pci.ids).
PCI_IDS = """# pci.ids excerpt of the simulated host
10de  NVIDIA Corporation
\t20b0  GA100 [A100 SXM4 40GB]
\t22a3  GH100 High Definition Audio Controller
\t2330  GH100 [H100 SXM5 80GB]
\t27b8  AD104GL [L4]
8086  Intel Corporation
\t1563  Ethernet Controller 10G X550T
"""
# Extra functions per profile: ("audio", gpu index) adds the GPU's HDMI audio function to its group;
# ("nic", gpu index) puts an Intel NIC bound to ixgbe into that GPU's group.
TOPOLOGY = {"passthrough": [("audio", 7), ("nic", 6)]}

DEFAULT_DRIVER = {0x0302: "nvidia", 0x0300: "nvidia", 0x0403: "snd_hda_intel", 0x0200: "ixgbe"}
BAR_64 = 0x0014220c  # IORESOURCE_MEM | IORESOURCE_MEM_64 | prefetch, as sysfs shows a 64-bit BAR


def _bdf(nvml_bus_id):
    domain, rest = nvml_bus_id.split(":", 1)
    return f"{int(domain, 16):04x}:{rest.lower()}"


def _mkfifo(path):
    if os.path.lexists(path):
        os.unlink(path)
    os.mkfifo(path, 0o600)


def _write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def _symlink(target, link):
    if os.path.lexists(link):
        os.unlink(link)
    os.symlink(target, link)


class FakePciHost:
    def __init__(self, host_root, profile, iommufd=False):
        self.root = host_root
        self.sys = os.path.join(host_root, "sys")
        # A profile name under nvml/mock/profiles, or a generated profile's path (test/lib/machine_profiles.py).
        with open(profile if profile.endswith(".yaml") else os.path.join(PROFILES, profile + ".yaml")) as f:
            gpus = yaml.safe_load(f)["gpus"]
        self.devices = {}  # bdf -> {class, device, vendor, group, minor?, numa}
        for i, g in enumerate(gpus):
            bdf = _bdf(g["pciBusId"])
            self.devices[bdf] = {"vendor": 0x10de, "device": DEVICE_IDS.get(g["product"], 0x2330), "class": 0x030200,
                                 "group": 10 + i, "minor": g.get("minor", i), "numa": g.get("numaNode", -1)}
        bdfs = list(self.devices)
        for kind, index in TOPOLOGY.get(profile, []):
            gpu = self.devices[bdfs[index]]
            if kind == "audio":
                self.devices[bdfs[index][:-1] + "1"] = {"vendor": 0x10de, "device": 0x22a3, "class": 0x040300,
                                                        "group": gpu["group"], "numa": gpu["numa"]}
            else:
                self.devices["0000:e1:00.0"] = {"vendor": 0x8086, "device": 0x1563, "class": 0x020000,
                                                "group": gpu["group"], "numa": gpu["numa"]}
        self.iommufd = iommufd
        self.override = {}
        self.refused, self.delays = set(), {}
        self.held_unbinds = {}  # bdf -> drivers of the unbinds written for it and not done yet (hold_unbinds)
        self.lock = threading.Lock()
        self.changed = threading.Condition(self.lock)
        self.writes = []  # (file, text) as the kernel saw them, for tests
        # Unbinds from nvidia that a real kernel would have left hanging: (bdf, pids with the node open).
        self.blocked = []
        # Test seam: called on the kernel thread between select() and the reads, where a writer's next
        # write can land (test/process/fake_kernel_test.py puts one there).
        self.after_select = None
        self.thread = None
        self._stop_r, self._stop_w = os.pipe()
        self._wake_r, self._wake_w = os.pipe()
        self._build()

    # --- the tree ----------------------------------------------------------------------------
    def _dev_dir(self, bdf):
        return os.path.join(self.sys, "devices", "pci" + bdf[:7], bdf)

    def _build(self):
        pci = os.path.join(self.sys, "bus", "pci")
        for d in ("nvidia", "vfio-pci", "snd_hda_intel", "ixgbe"):
            ddir = os.path.join(pci, "drivers", d)
            os.makedirs(ddir, exist_ok=True)
            _mkfifo(os.path.join(ddir, "bind"))
            _mkfifo(os.path.join(ddir, "unbind"))
        _mkfifo(os.path.join(pci, "drivers_probe"))
        os.makedirs(os.path.join(pci, "devices"), exist_ok=True)
        os.makedirs(os.path.join(self.sys, "module", "vfio_pci"), exist_ok=True)
        os.makedirs(os.path.join(self.root, "dev", "vfio"), exist_ok=True)
        _write(os.path.join(self.root, "dev", "vfio", "vfio"), "")
        self.restore_host_processes()
        if self.iommufd:
            _write(os.path.join(self.root, "dev", "iommu"), "")
        _write(os.path.join(self.root, "usr", "share", "misc", "pci.ids"), PCI_IDS)
        for bdf, d in self.devices.items():
            ddir = self._dev_dir(bdf)
            os.makedirs(ddir, exist_ok=True)
            _write(os.path.join(ddir, "vendor"), f"0x{d['vendor']:04x}\n")
            _write(os.path.join(ddir, "device"), f"0x{d['device']:04x}\n")
            _write(os.path.join(ddir, "class"), f"0x{d['class']:06x}\n")
            _write(os.path.join(ddir, "subsystem_vendor"), f"0x{d['vendor']:04x}\n")
            _write(os.path.join(ddir, "subsystem_device"), "0x16c1\n")
            c = d["class"]
            _write(os.path.join(ddir, "modalias"), f"pci:v0000{d['vendor']:04X}d0000{d['device']:04X}sv0000{d['vendor']:04X}"
                                                   f"sd000016C1bc{c >> 16:02X}sc{(c >> 8) & 0xff:02X}i{c & 0xff:02X}\n")
            _write(os.path.join(ddir, "numa_node"), f"{d['numa']}\n")
            _write(os.path.join(ddir, "sriov_numvfs"), "0\n")
            # BAR0 16 MiB (32-bit), BAR1 64 GiB and BAR3 32 MiB (64-bit): addressable memory 128Gi.
            bars = ["0x00000000fa000000 0x00000000faffffff 0x0000000000040200",
                    "0x0000200000000000 0x0000200fffffffff " + f"0x{BAR_64:016x}", "0x0 0x0 0x0",
                    "0x0000201000000000 0x0000201001ffffff " + f"0x{BAR_64:016x}", "0x0 0x0 0x0", "0x0 0x0 0x0"]
            _write(os.path.join(ddir, "resource"), "\n".join(bars) + "\n")
            _mkfifo(os.path.join(ddir, "driver_override"))
            group = os.path.join(self.sys, "kernel", "iommu_groups", str(d["group"]), "devices")
            os.makedirs(group, exist_ok=True)
            _symlink(os.path.relpath(ddir, group), os.path.join(group, bdf))
            _symlink(os.path.relpath(os.path.dirname(group), ddir), os.path.join(ddir, "iommu_group"))
            _symlink(os.path.relpath(ddir, os.path.join(pci, "devices")), os.path.join(pci, "devices", bdf))
            self._bind(bdf, DEFAULT_DRIVER[d["class"] >> 8])

    def _bind(self, bdf, driver):
        ddir = self._dev_dir(bdf)
        drv = os.path.join(self.sys, "bus", "pci", "drivers", driver)
        # As the kernel does it: vfio-pci's probe makes the group and cdev nodes, and the `driver` link
        # appears once the probe has returned, so whoever waits for the link finds the nodes there.
        # The cdev's node comes before its sysfs entry (devtmpfs makes it in device_add, which the agent
        # waits for through vfio-dev/), and both before the group node and the link.
        if driver == "vfio-pci":
            if self.iommufd:  # the device's cdev, /dev/vfio/devices/vfio<n>
                cdev = f"vfio{list(self.devices).index(bdf)}"
                _write(os.path.join(self.root, "dev", "vfio", "devices", cdev), "")
                os.makedirs(os.path.join(ddir, "vfio-dev", cdev), exist_ok=True)
            _write(os.path.join(self.root, "dev", "vfio", str(self.devices[bdf]["group"])), "")
        _symlink(os.path.relpath(drv, ddir), os.path.join(ddir, "driver"))
        _symlink(os.path.relpath(ddir, drv), os.path.join(drv, bdf))

    def _unbind(self, bdf):
        driver = self.driver(bdf)
        if not driver:
            return
        os.unlink(os.path.join(self._dev_dir(bdf), "driver"))
        if driver == "vfio-pci" and os.path.isdir(os.path.join(self._dev_dir(bdf), "vfio-dev")):
            for cdev in os.listdir(os.path.join(self._dev_dir(bdf), "vfio-dev")):
                os.rmdir(os.path.join(self._dev_dir(bdf), "vfio-dev", cdev))
                os.unlink(os.path.join(self.root, "dev", "vfio", "devices", cdev))
        os.unlink(os.path.join(self.sys, "bus", "pci", "drivers", driver, bdf))
        group = self.devices[bdf]["group"]
        if driver == "vfio-pci" and not any(self.driver(b) == "vfio-pci" for b, d in self.devices.items()
                                            if d["group"] == group):
            os.unlink(os.path.join(self.root, "dev", "vfio", str(group)))

    def _real_holders(self, device):
        """Processes of this machine with the simulated host's /dev/nvidia<minor> open (the mock NVML opens
        it, O_PATH, for each GPU its session has attached, as the real library keeps the device open)."""
        if "minor" not in device:
            return []
        node = os.path.join(self.root, "dev", f"nvidia{device['minor']}")
        out = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                if any(os.readlink(f"/proc/{pid}/fd/{fd}") == node for fd in os.listdir(f"/proc/{pid}/fd")):
                    out.append(int(pid))
            except OSError:
                continue  # gone, or not ours to read
        return out

    def driver(self, bdf):
        link = os.path.join(self._dev_dir(bdf), "driver")
        return os.path.basename(os.readlink(link)) if os.path.lexists(link) else ""

    def gpu_address(self, minor):
        return next(b for b, d in self.devices.items() if d.get("minor") == minor)

    # --- test knobs --------------------------------------------------------------------------
    def refuse(self, bdf, on=True):
        """A device the kernel will not rebind: a write to its driver_override fails (a real kernel
        fails the write(2) of a bind it refuses; here the open(2) of the FIFO, with ENXIO: nobody reads
        the fresh FIFO put in its place). Unbinds through the shared drivers/<d>/unbind still work."""
        path = os.path.join(self._dev_dir(bdf), "driver_override")
        with self.lock:
            if on == (bdf in self.refused):
                return
            (self.refused.add if on else self.refused.discard)(bdf)
            _mkfifo(path)  # the kernel thread's reader stays on the old, unlinked FIFO
            if not on and self.thread:
                self.fds[os.open(path, os.O_RDWR | os.O_NONBLOCK)] = ("override", bdf)
                os.write(self._wake_w, b"x")  # select() again, with the new reader

    def slow(self, bdf, seconds):
        with self.lock:
            self.delays[bdf] = seconds

    def hold_unbinds(self, bdf):
        """A kernel slow to unbind `bdf`: each unbind written for it waits until finish_unbinds(bdf), and
        is then done (or found blocked) as if it had only just arrived. The writer is not held up."""
        with self.lock:
            self.held_unbinds.setdefault(bdf, [])

    def wait_held_unbind(self, bdf, timeout=10.0):
        """Returns once an unbind of `bdf` is waiting (hold_unbinds), or fails after `timeout`."""
        with self.changed:
            if not self.changed.wait_for(lambda: self.held_unbinds.get(bdf), timeout):
                raise AssertionError(f"no unbind of {bdf} written within {timeout}s; writes: {self.writes}")

    def finish_unbinds(self, bdf):
        with self.lock:
            drivers = self.held_unbinds.pop(bdf, [])
        for driver in drivers:
            self._apply("unbind", driver, bdf)

    def hold(self, minor, pid, comm):
        """A host process with /dev/nvidia<minor> open (what fuser and /proc show)."""
        proc = os.path.join(self.root, "proc", str(pid))
        os.makedirs(os.path.join(proc, "fd"), exist_ok=True)
        _write(os.path.join(proc, "comm"), comm + "\n")
        _symlink(f"/dev/nvidia{minor}", os.path.join(proc, "fd", "3"))

    def restore_host_processes(self):
        """The host's /proc shows the kernel's threads (pid 2 is kthreadd only in the initial pid namespace)."""
        os.makedirs(os.path.join(self.root, "proc", "2", "fd"), exist_ok=True)
        _write(os.path.join(self.root, "proc", "2", "comm"), "kthreadd\n")

    def hide_host_processes(self):
        """The agent's /proc becomes a container's pid namespace (a DaemonSet without hostPID): no kernel thread."""
        proc = os.path.join(self.root, "proc", "2")
        os.unlink(os.path.join(proc, "comm"))
        os.rmdir(os.path.join(proc, "fd"))
        os.rmdir(proc)

    def hold_unreadably(self, pid, comm):
        """A host process whose open files the agent may not read (its /proc/<pid>/fd fails to list)."""
        proc = os.path.join(self.root, "proc", str(pid))
        _write(os.path.join(proc, "comm"), comm + "\n")
        _write(os.path.join(proc, "fd"), "")  # listing it fails (ENOTDIR), as EACCES would on a real /proc

    def persistenced(self, driver_root, pid=777):
        """nvidia-persistenced running on the host: its socket under the driver root, and every GPU's
        /dev/nvidia<minor> open in it. `nvidia-smi -i <address> -pm 0` asks it to let go of that GPU: the
        driver root's nvidia-smi (a recording stand-in) is wrapped to close that fd, as the daemon would."""
        _write(os.path.join(driver_root, "run", "nvidia-persistenced", "socket"), "")
        proc = os.path.join(self.root, "proc", str(pid))
        os.makedirs(os.path.join(proc, "fd"), exist_ok=True)
        _write(os.path.join(proc, "comm"), "nvidia-persistenced\n")
        cases = []
        for bdf, d in self.devices.items():
            if "minor" in d:
                fd = os.path.join(proc, "fd", str(100 + d["minor"]))
                _symlink(f"/dev/nvidia{d['minor']}", fd)
                cases.append(f"  *' -i {bdf} -pm 0'*) rm -f '{fd}' ;;")
        smi = os.path.join(driver_root, "usr", "bin", "nvidia-smi")
        os.replace(smi, smi + ".recording")
        _write(smi, "#!/bin/sh\ncase \" $*\" in\n" + "\n".join(cases) + "\nesac\nexec '" + smi + ".recording' \"$@\"\n")
        os.chmod(smi, 0o755)

    def release(self, pid):
        proc = os.path.join(self.root, "proc", str(pid))
        for name in ("fd/3", "comm"):
            p = os.path.join(proc, name)
            if os.path.lexists(p):
                os.unlink(p)
        os.rmdir(os.path.join(proc, "fd"))
        os.rmdir(proc)

    def set_driver(self, bdf, driver):
        """What another tool (or a previous boot) did: bind `bdf` to `driver` directly."""
        with self.lock:
            self._unbind(bdf)
            if driver:
                self._bind(bdf, driver)

    def wait_for_driver(self, bdf, driver, timeout=10.0):
        deadline = time.monotonic() + timeout
        with self.changed:
            while self.driver(bdf) != driver:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"{bdf} is bound to {self.driver(bdf)!r}, not {driver!r}")
                self.changed.wait(left)

    # --- the kernel --------------------------------------------------------------------------
    def start(self):
        pci = os.path.join(self.sys, "bus", "pci")
        self.fds = {}
        for d in os.listdir(os.path.join(pci, "drivers")):
            for op in ("bind", "unbind"):
                self.fds[os.open(os.path.join(pci, "drivers", d, op), os.O_RDWR | os.O_NONBLOCK)] = (op, d)
        self.fds[os.open(os.path.join(pci, "drivers_probe"), os.O_RDWR | os.O_NONBLOCK)] = ("probe", None)
        for bdf in self.devices:
            if bdf in self.refused:
                continue
            path = os.path.join(self._dev_dir(bdf), "driver_override")
            self.fds[os.open(path, os.O_RDWR | os.O_NONBLOCK)] = ("override", bdf)
        self.thread = threading.Thread(target=self._run, name="fake-kernel", daemon=True)
        self.thread.start()
        return self

    def stop(self):
        if self.thread:
            os.write(self._stop_w, b"x")
            self.thread.join()
            self.thread = None
            for fd in self.fds:
                os.close(fd)

    def _run(self):
        order = {"unbind": 0, "override": 1, "bind": 2, "probe": 2}
        while True:
            with self.lock:
                fds = list(self.fds)
            ready, _, _ = select.select(fds + [self._stop_r, self._wake_r], [], [])
            if self._stop_r in ready:
                return
            if self._wake_r in ready:
                os.read(self._wake_r, 64)
            if self.after_select:
                self.after_select()
            # A writer does each write only after the one before it: override, then probe. Every FIFO is
            # read (not only those select saw ready), later steps first: a probe read here had its
            # override written before it, so that override is in this batch too, and applied first.
            work = []
            for fd in sorted(fds, key=lambda f: -order[self.fds[f][0]]):
                op, arg = self.fds[fd]
                try:
                    data = os.read(fd, 4096).decode()
                except BlockingIOError:
                    continue
                for line in data.splitlines() or [""]:
                    work.append((order[op], op, arg, line.strip()))
            for _, op, arg, value in sorted(work, key=lambda w: w[0]):
                self._apply(op, arg, value)

    def _apply(self, op, arg, value):
        bdf = arg if op == "override" else value
        with self.changed:
            if op == "unbind" and bdf in self.held_unbinds:
                self.held_unbinds[bdf].append(arg)
                self.changed.notify_all()
                return
            self.writes.append((op, arg, value))
            delay = self.delays.get(bdf, 0)
        if delay and op in ("bind", "probe"):
            time.sleep(delay)  # a slow driver probe, on the kernel's side
        with self.changed:
            if bdf not in self.devices:
                return
            if op == "override":
                self.override[bdf] = value
            elif op == "unbind":
                holders = self._real_holders(self.devices[bdf]) if arg == "nvidia" else []
                if holders:
                    # nvidia's remove waits for every open file of the GPU: the write would never
                    # return. Recorded (and the unbind not done) instead of hanging the writer.
                    self.blocked.append((bdf, holders))
                elif self.driver(bdf) == arg:
                    self._unbind(bdf)
            elif not self.driver(bdf):
                wanted = self.override.get(bdf) or DEFAULT_DRIVER[self.devices[bdf]["class"] >> 8]
                if op == "probe" or wanted == arg:
                    self._bind(bdf, wanted if op == "probe" else arg)
            self.changed.notify_all()
