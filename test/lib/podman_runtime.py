"""A real container runtime for CDI checks: Debian's podman (4.3, rootful), which carries its own copy
of the container-device-interface library. Each apply() runs podman in a private mount namespace
(unshare -m) so nothing of the machine is touched:

* podman 4.3 reads CDI specs only from /etc/cdi and /var/run/cdi (its containers.conf has no
  cdi_spec_dirs yet): a tmpfs over /run, the node's CDI root bind-mounted at /run/cdi, a tmpfs over
  /etc/cdi when the machine has one;
* a tmpfs over /dev/shm, where libpod keeps its lock table, so runs in parallel do not share it;
* storage, run root and temp dir under the caller's directory (vfs driver: no overlay mounts);
* crun refuses a hybrid cgroup v1/v2 layout ("cgroups in hybrid mode not supported"): the namespace
  unmounts /sys/fs/cgroup/unified where it is mounted beside v1 controllers;
* podman asks for RLIMIT_NOFILE 1048576 and RLIMIT_NPROC 32768 by default, which a process
  without CAP_SYS_RESOURCE cannot raise to ("crun: setrlimit RLIMIT_NOFILE: Operation not
  permitted"): containers are created with the caller's own nofile limits and a small nproc.
* host_devices={path: (major, minor)}: character devices the host must have for specs that name a
  node by path only (VFIO's /dev/vfio/<group>, /dev/vfio/vfio, /dev/iommu, /dev/vfio/devices/vfioN:
  the CDI library stats the path on the host to learn its type and numbers). This machine's /dev is
  the host's devtmpfs, where a new entry would be the machine's, so the namespace mounts an overlay
  over /dev (lower: the real /dev, upper: a tmpfs of the namespace) and makes the nodes in it; the
  overlay hides /dev's submounts, so /dev/shm (above) and /dev/pts are mounted again inside it.

`podman create --device <id>` records the ids; `podman init` resolves them (an unknown id fails
with "unresolvable CDI devices"), writes the OCI spec (config.json) and has crun create the
container, which runs its createContainer hooks. apply() returns each container's OCI spec and
errors."""
import json
import os
import resource
import shutil
import subprocess
import tarfile

IMAGE = "localhost/nvdra-cdi-test:1"


def podman_binary():
    return shutil.which("podman")


class PodmanRuntime:
    def __init__(self, directory):
        self.dir = directory
        os.makedirs(directory, exist_ok=True)
        self.image_tar = os.path.join(directory, "image.tar")
        # A one-file root file system: the container is created, never started (crun only checks
        # that its command is an executable file).
        with tarfile.open(self.image_tar, "w") as tar:
            info = tarfile.TarInfo("bin/true")
            info.mode = 0o755
            tar.addfile(info)

    def _podman(self):
        d = self.dir
        return (f"podman --root {d}/storage --runroot {d}/run --tmpdir {d}/tmp --storage-driver vfs "
                f"--events-backend none --cgroup-manager cgroupfs")

    def _host_device_lines(self, host_devices):
        if not host_devices:
            return []  # the real /dev as it is
        layer = os.path.join(self.dir, "dev-layer")
        lines = [
            f"mkdir -p {layer}",
            f"mount -t tmpfs nvdra-cdi-devlayer {layer}",
            f"mkdir {layer}/upper {layer}/work",
            f"mount -t overlay nvdra-cdi-dev -o lowerdir=/dev,upperdir={layer}/upper,workdir={layer}/work /dev",
            "mount -t devpts -o newinstance,ptmxmode=0666 nvdra-cdi-pts /dev/pts",
        ]
        for path, (major, minor) in sorted(host_devices.items()):
            if not path.startswith("/dev/") or "'" in path or ".." in path.split("/"):
                raise ValueError(f"host_devices: {path!r} is not a path under /dev/")
            lines += [f"mkdir -p '{os.path.dirname(path)}'", f"rm -f '{path}'", f"mknod '{path}' c {major} {minor}"]
        return lines

    def apply(self, cdi_dir, containers, timeout=120, host_devices=None):
        """containers: {name: [CDI ids]}; host_devices: {path under /dev: (major, minor)}, character
        devices podman sees on the host (an overlay of this namespace only). Returns
        {name: {"config": OCI spec or None, "error": text}}."""
        out = os.path.join(self.dir, "out")
        shutil.rmtree(out, ignore_errors=True)
        os.makedirs(out)
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        p = self._podman()
        lines = [
            "set -e",
            "mount -t tmpfs nvdra-cdi-run /run",
            "mkdir -p /run/cdi",
            f"mount --bind {cdi_dir} /run/cdi",
            *self._host_device_lines(host_devices or {}),
            "mount -t tmpfs nvdra-cdi-shm /dev/shm",
            "if [ -d /etc/cdi ]; then mount -t tmpfs nvdra-cdi-etc /etc/cdi; fi",
            "if mountpoint -q /sys/fs/cgroup/unified && [ -d /sys/fs/cgroup/memory ]; then "
            "umount /sys/fs/cgroup/unified; fi",
            f"{p} import {self.image_tar} {IMAGE} >/dev/null",
            "set +e",
        ]
        for name, ids in containers.items():
            devices = " ".join(f"--device '{i}'" for i in ids)
            base = os.path.join(out, name)
            lines += [
                f"{p} create --name {name} --network none --ulimit nofile={soft}:{hard} --ulimit nproc=1024:1024 "
                f"{devices} {IMAGE} /bin/true >{base}.id 2>{base}.err",
                f"{p} init {name} >/dev/null 2>>{base}.err",
                f"cfg=$({p} inspect --format '{{{{.StaticDir}}}}' {name} 2>/dev/null)/config.json",
                f"[ -f \"$cfg\" ] && cp \"$cfg\" {base}.json",
            ]
        lines.append(f"{p} rm -fa >/dev/null 2>&1")
        script = os.path.join(self.dir, "apply.sh")
        with open(script, "w") as f:
            f.write("\n".join(lines) + "\n")
        run = subprocess.run(["unshare", "-m", "sh", script], capture_output=True, text=True, timeout=timeout)
        if run.returncode != 0:
            raise RuntimeError(f"podman set-up failed ({run.returncode}): {run.stderr}")
        result = {}
        for name in containers:
            base = os.path.join(out, name)
            config = None
            if os.path.exists(base + ".json"):
                with open(base + ".json") as f:
                    config = json.load(f)
            with open(base + ".err") as f:
                error = f.read().strip()
            result[name] = {"config": config, "error": error}
        return result

    def cleanup(self):
        shutil.rmtree(self.dir, ignore_errors=True)
