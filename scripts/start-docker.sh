#!/usr/bin/env bash
# Make a Docker engine answer on this host: install docker.io (and debootstrap, which
# scripts/build-images.sh needs without a registry) when missing, start dockerd when
# it is not running. The engine gets no bridge and touches no iptables: job
# containers use network "none" and image builds use the host network.
set -euo pipefail
if docker info >/dev/null 2>&1; then
    exit 0
fi
if ! command -v dockerd >/dev/null 2>&1 || ! command -v debootstrap >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq docker.io debootstrap >/dev/null
fi
mkdir -p /var/log
setsid dockerd --bridge=none --iptables=false --ip-forward=false --ip-masq=false \
    >/var/log/rocpath-dockerd.log 2>&1 < /dev/null &
for _ in $(seq 60); do
    docker info >/dev/null 2>&1 && exit 0
    sleep 1
done
echo "dockerd did not start; see /var/log/rocpath-dockerd.log" >&2
exit 1
