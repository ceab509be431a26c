#!/usr/bin/env bash
# Installs the system packages mpistack needs on Debian 12. Idempotent: packages already present are
# not touched and apt is not called at all when nothing is missing.
set -euo pipefail

packages=(
  # toolchain and Python virtual environments
  build-essential python3-venv python3-dev pkg-config
  # the two MPI implementations (native runs, mpistack-bench builds)
  mpich libmpich-dev openmpi-bin libopenmpi-dev
  libfabric-bin ucx-utils
  # results store integration tests
  postgresql postgresql-client
  # containers: podman with runc (crun refuses the hybrid cgroup layout here), base images by debootstrap
  podman runc debootstrap uidmap fuse-overlayfs slirp4netns
  # stack recipes: the rendered download+verify step is run by the checksum tests
  curl
  # benchmarks/gpu_check.py prepare: ./autogen.sh on Debian's UCX tarball, which has no configure script
  autoconf automake libtool
  # demo Slurm cluster (scripts/slurm-cluster): slurmctld, slurmd, client commands, munge; iproute2
  # and util-linux (ip, nsenter, unshare) for its node namespaces
  slurm-wlm munge iproute2 util-linux
  # report tests: report.html opened in headless Chromium and screenshotted
  chromium
)

missing=()
for pkg in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup-host: all ${#packages[@]} system packages present"
  exit 0
fi

echo "setup-host: installing ${missing[*]}"
as_root=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "setup-host: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
  as_root=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${as_root[@]}" apt-get update -qq
"${as_root[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
