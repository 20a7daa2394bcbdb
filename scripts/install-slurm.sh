#!/usr/bin/env bash
# Install what the Slurm tests and the slurm executor's benchmark need: Debian's slurm-wlm
# (slurmctld, slurmd), its clients, munge, and slurmdbd with its MySQL/MariaDB plugin (the
# accounting that sacct reads; the tests point it at the machine's MariaDB on 127.0.0.1).
#
#   scripts/install-slurm.sh           install what is missing (needs root or sudo)
#   scripts/install-slurm.sh --check   say what is there, install nothing (exit 1 if missing)
#
# From Debian's archive alone (bookworm: Slurm 22.05; trixie: 24.11). Nothing is started or
# enabled: the tests start a private one-node cluster of their own (tests/slurmcluster.py),
# with its own munge key and socket, ports and state folders, and stop it at the end; the
# packages' systemd units are left disabled where the install enables them. Idempotent: a
# second run finds the tools and does nothing.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

check_only=0
for arg in "$@"; do
    case "$arg" in
        --check) check_only=1 ;;
        -h | --help)
            sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'
            exit 0
            ;;
        *)
            echo "install-slurm: unknown argument $arg" >&2
            exit 2
            ;;
    esac
done

log() { echo "install-slurm: $*" >&2; }
sudo_if_needed() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

missing=()
for tool in slurmctld slurmd slurmdbd munged sbatch squeue scontrol scancel sinfo sacct sacctmgr; do
    command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
# slurmdbd stores into MySQL/MariaDB through this plugin (its own package on Debian)
plugin_dir=$(dirname "$(dpkg -L slurm-wlm-basic-plugins 2>/dev/null | grep -m1 '/accounting_storage_slurmdbd.so$' || echo /x/none)")
[ -e "$plugin_dir/accounting_storage_mysql.so" ] || missing+=("accounting_storage_mysql.so")
if [ "${#missing[@]}" -eq 0 ]; then
    log "Slurm $(dpkg-query -W -f='${Version}' slurm-wlm 2>/dev/null || echo '?'), slurmdbd and munge are installed"
    exit 0
fi
if [ "$check_only" -eq 1 ]; then
    log "missing: ${missing[*]} (run scripts/install-slurm.sh as root)"
    exit 1
fi
# policy-rc.d: no daemon is started by the install itself (a container has no init anyway)
policy=/usr/sbin/policy-rc.d
made_policy=0
if [ ! -e "$policy" ] && [ "$(id -u)" -eq 0 ]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy"
    chmod +x "$policy"
    made_policy=1
fi
sudo_if_needed apt-get update -qq
sudo_if_needed apt-get install -y -qq --no-install-recommends slurm-wlm munge slurm-client slurmdbd \
    slurm-wlm-mysql-plugin >/dev/null
if [ "$made_policy" -eq 1 ]; then rm -f "$policy"; fi
log "installed with apt: slurm-wlm munge slurm-client slurmdbd slurm-wlm-mysql-plugin (Slurm $(dpkg-query -W -f='${Version}' slurm-wlm 2>/dev/null || echo '?'))"
