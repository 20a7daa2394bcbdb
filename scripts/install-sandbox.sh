#!/usr/bin/env bash
# Install what the local executor's sandbox needs: bubblewrap (bwrap) and setpriv.
#
#   scripts/install-sandbox.sh           install what is missing (needs root or sudo)
#   scripts/install-sandbox.sh --check   say what is there, install nothing (exit 1 if missing)
#
# Both come from Debian's archive (bookworm and trixie): bubblewrap, and util-linux, which
# every Debian system has and which carries setpriv. Without them local jobs that run a
# team's code (hipify-scan, hipify-convert, compile-check) refuse to run unless an
# operator sets ROCPATH_LOCAL_UNSANDBOXED=1 (see docs/architecture.md, "Local execution").
# Idempotent: a second run finds the tools and does nothing.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

check_only=0
for arg in "$@"; do
    case "$arg" in
        --check) check_only=1 ;;
        -h | --help)
            sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'
            exit 0
            ;;
        *)
            echo "install-sandbox: unknown argument $arg" >&2
            exit 2
            ;;
    esac
done

log() { echo "install-sandbox: $*" >&2; }
sudo_if_needed() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

missing=()
command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
command -v setpriv >/dev/null 2>&1 || missing+=(util-linux)
if [ "${#missing[@]}" -eq 0 ]; then
    log "bwrap $(bwrap --version | awk '{print $2}') and setpriv are installed"
    exit 0
fi
if [ "$check_only" -eq 1 ]; then
    log "missing: ${missing[*]} (run scripts/install-sandbox.sh as root)"
    exit 1
fi
sudo_if_needed apt-get update -qq
sudo_if_needed apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
log "installed with apt: ${missing[*]}"
