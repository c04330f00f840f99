"""What a binary costs on a node beyond the program itself: the shared libraries it loads that a
Debian base system (a minbase root: the packages of Priority required) does not already have, so a
dynamically linked agent is set against self-contained Go binaries like with like; and the size of a
built OCI image, when there is one."""
import glob
import os
import re
import subprocess

BASE_PRIORITIES = ("required",)


def shared_libraries(binary):
    """Resolved paths of the libraries `binary` loads (none for a static binary)."""
    out = subprocess.run(["ldd", binary], capture_output=True, text=True)
    return sorted({os.path.realpath(m) for m in re.findall(r"=> (/\S+)", out.stdout)})


def _package_priority(library):
    for path in (library, "/usr" + library if not library.startswith("/usr/") else library[4:]):
        owner = subprocess.run(["dpkg", "-S", path], capture_output=True, text=True)
        if owner.returncode == 0:
            package = owner.stdout.split(":", 1)[0]
            priority = subprocess.run(["dpkg-query", "-W", "-f=${Priority}", package], capture_output=True, text=True)
            return priority.stdout.strip()
    return ""


def beyond_base_bytes(binaries):
    """Bytes of the shared libraries the binaries need that a Debian base system lacks."""
    libraries = {lib for b in binaries for lib in shared_libraries(b)}
    return sum(os.path.getsize(lib) for lib in libraries if _package_priority(lib) not in BASE_PRIORITIES)


def image_bytes(source_dir):
    """Size of the OCI archive contrib/image/build-oci.sh wrote (NVDRA_IMAGE_TAR or build-image/), or None."""
    paths = [os.environ.get("NVDRA_IMAGE_TAR", "")] + sorted(glob.glob(os.path.join(source_dir, "build-image",
                                                                                   "nvdra-agent-*.oci.tar")))
    found = [p for p in paths if p and os.path.isfile(p)]
    return os.path.getsize(found[0]) if found else None
