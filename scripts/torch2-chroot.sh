#!/usr/bin/env bash
# Builds (or refreshes) the torch 2.x test tier: a plain Debian trixie chroot
# with python3-torch 2.6 and python3-torchvision 0.21 (CPython 3.13, Kineto,
# a CET-built libtorch). The integration tests run every feature against it
# as well as against the host's torch 1.13 (docs/testing.md).
#
#   sudo scripts/torch2-chroot.sh            # build or check; prints the versions
#   GPUPROF_TORCH2_ROOT=/srv/x scripts/...    # somewhere else (the tests read the same variable)
#
# Idempotent: a finished step is skipped, a half-finished debootstrap is
# redone, and only missing bind mounts are mounted. A plain chroot on
# purpose: its processes' /proc/PID/maps name files as the host sees them
# (ROOT/usr/lib/...), the case a container's own mount namespace hides, so no
# link may make ROOT/ROOT resolve. Undo:
#   for m in tmp dev/shm dev/pts dev sys proc; do umount "$ROOT/$m"; done; rm -rf "$ROOT"
set -euo pipefail
ROOT=${GPUPROF_TORCH2_ROOT:-/srv/gpuprof-trixie}
PKGS="python3-torch python3-torchvision"

if [[ $(id -u) -ne 0 ]]; then
  echo "torch2-chroot: run as root (debootstrap, chroot and bind mounts need it)" >&2
  exit 1
fi

# The Debian archive the host's apt uses (deb822 sources first, then the
# one-line format).
mirror=${MIRROR:-$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/*.sources 2>/dev/null || true)}
[[ -n "$mirror" ]] || mirror=$(awk '$1 == "deb" {print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)
[[ -n "$mirror" ]] || { echo "torch2-chroot: no Debian archive in the apt sources; set MIRROR" >&2; exit 1; }

if ! command -v debootstrap >/dev/null; then
  echo "torch2-chroot: installing debootstrap"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends debootstrap \
    || { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends debootstrap; }
fi

# 1. The base system. A finished debootstrap leaves apt-get; a half one is
#    started again from nothing.
if [[ ! -x "$ROOT/usr/bin/apt-get" ]]; then
  echo "torch2-chroot: debootstrap trixie into $ROOT (about a minute)"
  for m in tmp dev/shm dev/pts dev sys proc; do mountpoint -q "$ROOT/$m" 2>/dev/null && umount "$ROOT/$m"; done
  rm -rf "$ROOT"
  debootstrap --variant=minbase trixie "$ROOT" "$mirror" >/dev/null
fi
if [[ -e "$ROOT$ROOT" ]]; then
  echo "torch2-chroot: $ROOT$ROOT exists: it would hide the path bugs this tier is for; remove it" >&2
  exit 1
fi

# 2. Bind mounts: /tmp is shared so that tests hand files to the chroot's
#    processes by the same path.
for m in proc sys dev dev/pts dev/shm tmp; do
  mkdir -p "$ROOT/$m"
  mountpoint -q "$ROOT/$m" || mount --bind "/$m" "$ROOT/$m"
done

# 3. torch, unless every package is there already.
installed=$(chroot "$ROOT" dpkg-query -W -f='${Status}\n' $PKGS 2>/dev/null | grep -c "install ok installed" || true)
if [[ "$installed" -ne 2 ]]; then
  echo "torch2-chroot: installing $PKGS in $ROOT (about a minute)"
  chroot "$ROOT" apt-get update -q >/dev/null
  chroot "$ROOT" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $PKGS >/dev/null
  chroot "$ROOT" apt-get clean  # the .debs are not needed afterwards
fi

chroot "$ROOT" /usr/bin/python3 -c 'import sys, torch, torchvision
print("torch2-chroot: torch", torch.__version__, "torchvision", torchvision.__version__,
      "python", sys.version.split()[0], "kineto", torch.autograd.profiler.kineto_available())'
