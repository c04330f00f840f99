#!/usr/bin/env bash
# A Debian minbase root file system with the given packages, from the Debian mirror the machine's apt
# is configured with (contrib/dev/debian-mirror): the image build and the .deb install check use it.
#
#   contrib/image/minbase-rootfs.sh OUT_DIR [PACKAGE,PACKAGE,...]     (root; needs debootstrap)
# Env: DEBIAN_MIRROR overrides the machine's mirror; NVDRA_ROOTFS_CACHE (default
#      ~/.cache/nvdra/rootfs) keeps one tarball per suite, mirror and package set, so a second build
#      (CI on the same machine) unpacks in seconds instead of running debootstrap again.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=$(realpath -m "$1")
packages=${2:-}
[[ $(id -u) == 0 ]] || { echo "minbase-rootfs.sh: needs root (debootstrap)" >&2; exit 2; }
command -v debootstrap >/dev/null || { echo "minbase-rootfs.sh: debootstrap is not installed" >&2; exit 2; }
mirror=${DEBIAN_MIRROR:-$("$here/../dev/debian-mirror")}
suite=$("$here/../dev/debian-mirror" --suite)
cache=${NVDRA_ROOTFS_CACHE:-${HOME:-/root}/.cache/nvdra/rootfs}
sorted=$(tr ',' '\n' <<<"$packages" | sed '/^$/d' | sort -u | paste -sd, -)
key=$(printf '%s\n%s\n%s\n' "$suite" "$mirror" "$sorted" | sha256sum | cut -c1-16)
tarball=$cache/$suite-minbase-$key.tar

rm -rf "$out"
mkdir -p "$out"
if [[ -f $tarball ]]; then
  echo "minbase-rootfs.sh: $suite minbase (+$sorted) from the cache $tarball"
  tar -C "$out" --numeric-owner -xpf "$tarball"
  exit 0
fi
debootstrap --variant=minbase ${sorted:+--include="$sorted"} "$suite" "$out" "$mirror"
mkdir -p "$cache"
tar -C "$out" --numeric-owner -cpf "$tarball.tmp.$$" .
mv "$tarball.tmp.$$" "$tarball"
