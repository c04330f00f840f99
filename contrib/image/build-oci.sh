#!/usr/bin/env bash
# Builds the nvdra-agent OCI image with no container engine and no registry: a Debian 12 (bookworm)
# minbase rootfs from the machine's Debian mirror (contrib/image/minbase-rootfs.sh: debootstrap,
# cached) with the runtime libraries the built binaries link against, the binaries copied in, packed
# as an OCI image layout with umoci and tarred.
#
#   contrib/image/build-oci.sh [OUT_DIR]     (root; needs debootstrap, umoci and the mirror)
# Env: NVDRA_BUILD_DIR (default build/, must hold agent/nvdra-agent, agent/ctl/nvdractl and
#      agent/admission/nvdra-webhook: the admission webhook runs from the same image),
#      DEBIAN_MIRROR (default: the machine's apt mirror), NVDRA_IMAGE_TAG (default 0.1.0).
# Result: OUT_DIR/oci (image layout, tag NVDRA_IMAGE_TAG) and OUT_DIR/nvdra-agent-<tag>.oci.tar,
# loadable with `skopeo copy oci-archive:… docker://…` or `podman load -i …`.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
out=$(realpath -m "${1:-$top/build-image}")
build=$(realpath -m "${NVDRA_BUILD_DIR:-$top/build}")
tag=${NVDRA_IMAGE_TAG:-0.1.0}
agent=$build/agent/nvdra-agent
ctl=$build/agent/ctl/nvdractl
webhook=$build/agent/admission/nvdra-webhook

[[ $(id -u) == 0 ]] || { echo "build-oci.sh: needs root (debootstrap, umoci unpack)" >&2; exit 2; }
for tool in debootstrap umoci; do
  command -v "$tool" >/dev/null || { echo "build-oci.sh: $tool is not installed (apt-get install $tool)" >&2; exit 2; }
done
for bin in "$agent" "$ctl" "$webhook"; do
  [[ -x $bin ]] || { echo "build-oci.sh: $bin not built (cmake --build $build --target nvdra-agent nvdractl nvdra-webhook)" >&2; exit 2; }
done

# The Debian packages that own the shared libraries the binaries load. ldd reports /lib/… paths,
# dpkg knows the merged-/usr ones.
owner() { dpkg -S "$1" 2>/dev/null || dpkg -S "/usr$1"; }
packages=$(ldd "$agent" "$ctl" "$webhook" | awk '/=> \//{print $3}' | sort -u | while read -r lib; do owner "$lib"; done |
  cut -d: -f1 | sort -u | paste -sd, -)
echo "runtime packages: $packages"

rm -rf "$out"
mkdir -p "$out"
rootfs=$out/rootfs
"$top/contrib/image/minbase-rootfs.sh" "$rootfs" "$packages"
install -D -m 0755 "$agent" "$rootfs/usr/sbin/nvdra-agent"
install -D -m 0755 "$ctl" "$rootfs/usr/bin/nvdractl"
install -D -m 0755 "$webhook" "$rootfs/usr/sbin/nvdra-webhook"
# Nothing in the image needs the package manager's caches.
rm -rf "$rootfs"/var/cache/apt/* "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/log/*

umoci init --layout "$out/oci"
umoci new --image "$out/oci:$tag"
umoci unpack --image "$out/oci:$tag" "$out/bundle"
cp -a "$rootfs/." "$out/bundle/rootfs/"
umoci repack --image "$out/oci:$tag" "$out/bundle"
# The DaemonSet runs `command: ["nvdra-agent"]` privileged: the name resolves through the image's PATH,
# and the agent runs as root (device nodes, sysfs, kubelet's plugin directories).
umoci config --image "$out/oci:$tag" --config.entrypoint /usr/sbin/nvdra-agent \
  --config.env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin --config.user 0:0 \
  --config.label org.opencontainers.image.title=nvdra-agent \
  --config.label org.opencontainers.image.licenses=Apache-2.0 \
  --config.label "org.opencontainers.image.version=$tag"
umoci gc --layout "$out/oci"
rm -rf "$out/bundle"
tar -C "$out/oci" -cf "$out/nvdra-agent-$tag.oci.tar" .
echo "image: $out/nvdra-agent-$tag.oci.tar (OCI layout $out/oci, tag $tag)"
