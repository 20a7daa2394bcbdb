#!/usr/bin/env bash
# Build the job images without a container registry.
#
#   scripts/build-images.sh            # rocpath/debian (python3, hipify-perl, hipcc, rocminfo, rocm-smi)
#   scripts/build-images.sh --blas     # also rocpath/debian-blas (+ librocblas0-bench, ~1.9 GB more)
#
# The base is debian:trixie-slim when it can be pulled; otherwise a trixie minbase
# root is made with debootstrap from the Debian archive and imported. The base is
# tagged with a hash of what it is made from and reused; docker's layer cache does
# the rest, so a second run takes seconds.
set -euo pipefail
cd "$(dirname "$0")/.."

MIRROR="${ROCPATH_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
SUITE=trixie
BLAS=0
[ "${1:-}" = "--blas" ] && BLAS=1

docker info >/dev/null 2>&1 || { echo "no Docker engine answers (see docs/containers.md)" >&2; exit 1; }

base_key=$(printf '%s\n' "minbase $SUITE $MIRROR v1" | sha256sum | cut -c1-12)
BASE="rocpath/trixie-base:$base_key"
if ! docker image inspect "$BASE" >/dev/null 2>&1; then
    if timeout 60 docker pull -q debian:trixie-slim >/dev/null 2>&1; then
        docker tag debian:trixie-slim "$BASE"
    else
        command -v debootstrap >/dev/null || { echo "debootstrap is missing (apt-get install debootstrap)" >&2; exit 1; }
        root=$(mktemp -d /var/tmp/rocpath-rootfs.XXXXXX)
        trap 'rm -rf "$root"' EXIT
        echo "making the $SUITE base with debootstrap (no registry reachable)…"
        debootstrap --variant=minbase "$SUITE" "$root" "$MIRROR" >/dev/null
        rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
        tar -C "$root" -c . | docker import -c 'CMD ["/bin/bash"]' - "$BASE" >/dev/null
        rm -rf "$root"
        trap - EXIT
    fi
fi
echo "base: $BASE"

# Job images take only the stack package from the repository.
context=$(mktemp -d)
trap 'rm -rf "$context"' EXIT
cp -r stack "$context/stack"
find "$context" -name __pycache__ -prune -exec rm -rf {} +

build() {
    local tag=$1 extra=$2
    docker build --network host -q -f containers/debian/Dockerfile \
        --build-arg BASE="$BASE" --build-arg EXTRA_PACKAGES="$extra" -t "$tag" "$context" >/dev/null
    echo "$tag $(docker image inspect -f '{{.Id}}' "$tag") $(docker image inspect -f '{{.Size}}' "$tag" | numfmt --to=iec)"
}
build rocpath/debian:latest ""
[ "$BLAS" = 1 ] && build rocpath/debian-blas:latest "librocblas0-bench"
exit 0
