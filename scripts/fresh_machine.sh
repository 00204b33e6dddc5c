#!/usr/bin/env bash
# A new Debian 12 machine in a folder, and the README's two commands run in it as a newcomer would: a debootstrap
# chroot (stock python3.11, nothing of lwm's installed, no caches), a clean clone, a clean shell keeping only the
# host's certificate and package-index settings. What it does not cover: the host's kernel (bubblewrap's user
# namespaces, /proc) and its network are shared; the chroot's apt reaches the same mirror as the host's.
#   scripts/fresh_machine.sh build [ROOT]        make the chroot (debootstrap; a few minutes)
#   scripts/fresh_machine.sh run ROOT CMD...      run CMD in a clean shell in the chroot's clone (/home/new/lwm)
#   e.g. scripts/fresh_machine.sh run /var/tmp/lwm-fresh 'time make run'
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
what=${1:?build or run}
root=${2:-/var/tmp/lwm-fresh}
case "$what" in
build)
  command -v debootstrap >/dev/null || { apt-get update -qq; apt-get install -y -qq --no-upgrade debootstrap; }
  [ -x "$root/usr/bin/python3" ] || debootstrap --include=python3,make,git,ca-certificates bookworm "$root" \
    http://deb.debian.org/debian
  cp /etc/resolv.conf "$root/etc/resolv.conf"
  # the host's certificate bundle (a registry proxy's CA, as on company networks) and pip's index settings
  cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/host-ca.crt"
  [ -f /etc/pip.conf ] && cp /etc/pip.conf "$root/etc/pip.conf"
  rm -rf "$root/home/new/lwm"
  mkdir -p "$root/home/new"
  git clone -q "$here" "$root/home/new/lwm"
  ;;
run)
  shift 2
  # the chroot's / must be a mount point of its own, as a machine's is (bubblewrap makes it a slave mount)
  mountpoint -q "$root" || mount --bind "$root" "$root"
  for fs in proc dev dev/pts; do
    mountpoint -q "$root/$fs" || mount --bind "/$fs" "$root/$fs"
  done
  # /sys with what is mounted under it (the cgroup hierarchies, as a machine has them: per-episode limits)
  mountpoint -q "$root/sys" || mount --rbind /sys "$root/sys"
  mountpoint -q "$root/tmp" || mount -t tmpfs tmpfs "$root/tmp"
  chroot "$root" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/home/new \
    SSL_CERT_FILE=/etc/ssl/certs/host-ca.crt NODE_EXTRA_CA_CERTS=/etc/ssl/certs/host-ca.crt \
    PIP_CERT=/etc/ssl/certs/host-ca.crt LANG=C.UTF-8 \
    /bin/bash -c "cd /home/new/lwm && $*"
  ;;
esac
