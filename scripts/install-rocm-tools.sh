#!/usr/bin/env bash
# Make hipify-perl (and, with --hipcc, hipcc) available on this host, from Debian's archive only.
#
#   scripts/install-rocm-tools.sh            hipify-perl
#   scripts/install-rocm-tools.sh --hipcc    hipify-perl and hipcc
#   scripts/install-rocm-tools.sh --check    say what is there, install nothing (exit 1 if missing)
#
# Debian 13 (trixie) and later: plain `apt-get install` (both are in the archive).
#
# Debian 12 (bookworm): the host's APT configuration is NOT touched. A private APT
# state under $ROCPATH_TOOLS_PREFIX/apt (its own sources list naming trixie, its own
# lists and cache) is used only to download the trixie package, which is then
# unpacked with `dpkg -x` into $ROCPATH_TOOLS_PREFIX/root and linked from
# $ROCPATH_BIN_DIR. hipify-perl is one perl script needing only core modules, so
# bookworm's perl runs it. Nothing else on the host changes, and dpkg's database
# does not learn of it (remove the prefix and the link to undo).
#
# hipcc: `apt-get install hipcc` from the host's own suite. Bookworm has hipcc 5.2.3
# (clang 15: gfx90a and older; clang 15 does not know gfx942 and bookworm ships no
# gfx1100 device library); trixie has 5.7.1 (clang 17, gfx942 too), which is what the
# debian job image carries. Trixie's hipcc cannot go onto bookworm cleanly (clang-17
# and the HIP runtime are built against trixie's libc and libstdc++). With nvcc on
# PATH hipcc defaults to the NVIDIA platform: set HIP_PLATFORM=amd (rocpath does).
#
# Idempotent: a second run finds the tools and does nothing.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

PREFIX="${ROCPATH_TOOLS_PREFIX:-/opt/rocpath-tools}"
BIN_DIR="${ROCPATH_BIN_DIR:-/usr/local/bin}"
MIRROR="${ROCPATH_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg

want_hipcc=0
check_only=0
for arg in "$@"; do
    case "$arg" in
        --hipcc) want_hipcc=1 ;;
        --check) check_only=1 ;;
        -h | --help)
            sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'
            exit 0
            ;;
        *)
            echo "install-rocm-tools: unknown argument $arg" >&2
            exit 2
            ;;
    esac
done

log() { echo "install-rocm-tools: $*" >&2; }

have() {
    command -v "$1" >/dev/null 2>&1 || [ -x "${ROCM_PATH:-/opt/rocm}/bin/$1" ]
}

codename() {
    # VERSION_CODENAME of /etc/os-release; empty when not Debian-like.
    (. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")
}

sudo_if_needed() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

apt_has() {
    # Does the host's own APT know the package (trixie and later do)?
    apt-cache show "$1" >/dev/null 2>&1
}

apt_updated=0
apt_update_once() {
    if [ "$apt_updated" -eq 0 ]; then
        sudo_if_needed apt-get update -qq
        apt_updated=1
    fi
}

# --- private APT for downloading trixie packages onto an older host ----------------

PRIVATE_APT="$PREFIX/apt"
private_apt_opts() {
    echo "-o Dir::Etc::SourceList=/dev/null" \
        "-o Dir::Etc::SourceParts=$PRIVATE_APT/sources.list.d" \
        "-o Dir::Etc::Preferences=/dev/null" \
        "-o Dir::Etc::PreferencesParts=$PRIVATE_APT/preferences.d" \
        "-o Dir::State::Lists=$PRIVATE_APT/lists" \
        "-o Dir::Cache=$PRIVATE_APT/cache" \
        "-o APT::Sandbox::User=root" \
        "-o Debug::NoLocking=1"
}

private_apt_update() {
    mkdir -p "$PRIVATE_APT/sources.list.d" "$PRIVATE_APT/preferences.d" \
        "$PRIVATE_APT/lists/partial" "$PRIVATE_APT/cache/archives/partial"
    cat >"$PRIVATE_APT/sources.list.d/trixie.sources" <<EOF
Types: deb
URIs: $MIRROR
Suites: trixie
Components: main
Signed-By: $KEYRING
EOF
    # shellcheck disable=SC2046
    apt-get $(private_apt_opts) update -qq
}

install_hipify_from_trixie() {
    local root="$PREFIX/root" tmp
    tmp="$(mktemp -d)"
    private_apt_update
    # shellcheck disable=SC2046
    (cd "$tmp" && apt-get $(private_apt_opts) download -qq hipify-perl)
    mkdir -p "$root"
    dpkg -x "$tmp"/hipify-perl_*.deb "$root"
    mkdir -p "$BIN_DIR"
    ln -sfn "$root/usr/bin/hipify-perl" "$BIN_DIR/hipify-perl"
    log "hipify-perl $(dpkg-deb -f "$tmp"/hipify-perl_*.deb Version) unpacked into $root," \
        "linked as $BIN_DIR/hipify-perl"
    rm -rf "$tmp"
}

install_hipify() {
    if have hipify-perl; then
        log "hipify-perl already present: $(command -v hipify-perl || echo "${ROCM_PATH:-/opt/rocm}/bin/hipify-perl")"
        return
    fi
    apt_update_once
    if apt_has hipify-perl; then
        sudo_if_needed apt-get install -y -qq --no-install-recommends hipify-perl >/dev/null
        log "hipify-perl installed with apt"
    else
        install_hipify_from_trixie
    fi
    hipify-perl -version 2>&1 | sed 's/^/install-rocm-tools: /' >&2
}

# --- hipcc ---------------------------------------------------------------------------

install_hipcc() {
    if have hipcc; then
        log "hipcc already present: $(command -v hipcc || echo "${ROCM_PATH:-/opt/rocm}/bin/hipcc")"
        return
    fi
    apt_update_once
    if ! apt_has hipcc; then
        log "hipcc: not in this host's APT sources; use the debian job image or a ROCm image"
        return 1
    fi
    sudo_if_needed apt-get install -y -qq --no-install-recommends hipcc >/dev/null
    log "hipcc $(dpkg-query -W -f '${Version}' hipcc) installed with apt"
    case "$(codename)" in
        bookworm)
            log "note: bookworm's hipcc is 5.2.3 on clang 15: gfx90a and older compile," \
                "gfx942 is unknown to clang 15 and gfx1100's device library is not packaged;" \
                "trixie's hipcc (5.7.1, clang 17) is in the debian job image"
            ;;
    esac
    if command -v nvcc >/dev/null 2>&1; then
        log "note: nvcc is on PATH, so hipcc defaults to the NVIDIA platform; set HIP_PLATFORM=amd"
    fi
}

if [ "$check_only" -eq 1 ]; then
    status=0
    for tool in hipify-perl $([ "$want_hipcc" -eq 1 ] && echo hipcc); do
        if have "$tool"; then log "$tool: present"; else log "$tool: missing" && status=1; fi
    done
    exit "$status"
fi

install_hipify
if [ "$want_hipcc" -eq 1 ]; then
    install_hipcc
fi
