#!/usr/bin/env bash
# Installs the system packages mpistack needs on Debian 12, and gives users subordinate ids for rootless
# podman and mmdebstrap. Idempotent: packages already present are not touched and apt is not called at all
# when nothing is missing.
#
#   sudo scripts/setup-host.sh [USER...]   an administrator, once: the packages, and subordinate ids for each
#                                          USER (and for the one who ran sudo) that has none
#   scripts/setup-host.sh                  any user: checks only; when something is missing, says what and
#                                          the one command an administrator runs, and exits 1 (it never
#                                          asks for a password)
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
  # unprivileged containers: Charliecloud's ch-run (0.31); images converted from podman's with tar
  charliecloud-runtime tar
  # base images without root (mmdebstrap --mode=unshare, which uses the user's subordinate ids)
  mmdebstrap
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

# subordinate ids (subuid(5), subgid(5)): a line NAME:FIRST:COUNT (or UID:FIRST:COUNT) in both files
has_subids() {
  local name=$1 uid
  uid=$(id -u "$name")
  for file in /etc/subuid /etc/subgid; do
    grep -Eq "^($name|$uid):[0-9]+:[0-9]+$" "$file" 2>/dev/null || return 1
  done
}

if [ "$(id -u)" -ne 0 ]; then
  me=$(id -un)
  lacking=()
  [ ${#missing[@]} -eq 0 ] || lacking+=("the Debian packages ${missing[*]}")
  has_subids "$me" || lacking+=("subordinate ids for $me in /etc/subuid and /etc/subgid (rootless podman, mmdebstrap)")
  if [ ${#lacking[@]} -ne 0 ]; then
    joined=$(printf '%s; ' "${lacking[@]}")
    echo "setup-host: this machine lacks ${joined%; }. An administrator runs once: sudo $0 $me" >&2
    exit 1
  fi
  echo "setup-host: all ${#packages[@]} system packages present, and subordinate ids for $me"
  exit 0
fi

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup-host: all ${#packages[@]} system packages present"
else
  echo "setup-host: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# subordinate ids for the users named, and for the one who ran sudo: 65536 each, after the highest in use
next_free() {
  awk -F: 'BEGIN { next_id = 100000 } NF == 3 && $2 + $3 > next_id { next_id = $2 + $3 } END { print next_id }' "$1"
}
users=("$@")
[ -z "${SUDO_USER:-}" ] || [ "$SUDO_USER" = root ] || users+=("$SUDO_USER")
for user in "${users[@]}"; do
  id -u "$user" >/dev/null 2>&1 || { echo "setup-host: no user $user" >&2; exit 1; }
  has_subids "$user" && continue
  touch /etc/subuid /etc/subgid
  first_uid=$(next_free /etc/subuid)
  first_gid=$(next_free /etc/subgid)
  usermod --add-subuids "$first_uid-$((first_uid + 65535))" --add-subgids "$first_gid-$((first_gid + 65535))" "$user"
  echo "setup-host: subordinate ids $first_uid-$((first_uid + 65535)) (and gids from $first_gid) for $user"
done
