#!/usr/bin/env bash
# relay-image.sh — the relay DaemonSet's image (deploy/helm/syncloop), made here and
# imported into a running lab's containerd: nothing is pulled.
#
# It builds the syncloop binary from this checkout (CGO_ENABLED=0, static), packs it with
# a static busybox (sh and chroot, which the chart's relay command needs) into a one-layer
# image with mkimg.py, as the lab makes its other images, and imports it into the lab
# containerd's k8s.io namespace, where the kubelet looks. The chart's lab values name it
# (relay.image: localhost/syncloop-relay:lab, pullPolicy Never). Its entrypoint is syncloop,
# as the Dockerfile's relay stage's is.
#
#   sudo server/lab/relay-image.sh [--dir LAB_DIR] [--tag TAG]     prints image=REF
#
# The tarball is cached in ~/.cache/syncloop/lab/images, keyed by the binary's bytes.
set -euo pipefail

SELF=$(readlink -f "${BASH_SOURCE[0]}")
HERE=$(dirname "$SELF")
ROOT=$(cd "$HERE/../.." && pwd)
DIR=${LAB_DIR:-/tmp/syncloop-lab}
TAG=lab
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/syncloop/lab

log() { printf '[relay-image %s] %s\n' "$(date -u +%T)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

while [ $# -gt 0 ]; do
	case $1 in
	--dir) DIR=$2; shift ;;
	--tag) TAG=$2; shift ;;
	-h | --help) sed -n '2,13p' "$SELF" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) die "unknown flag $1 (see --help)" ;;
	esac
	shift
done
case $TAG in '' | *[!A-Za-z0-9._-]*) die "--tag $TAG: want letters, digits, . _ -" ;; esac
REF=localhost/syncloop-relay:$TAG
SOCK=$DIR/containerd/containerd.sock
[ -S "$SOCK" ] || die "no lab containerd at $SOCK: start the lab first (server/lab/lab.sh start --cluster)"
[ -x /bin/busybox ] || die "no /bin/busybox: apt-get install busybox-static (lab.sh start installs it)"

img=$CACHE/images
mkdir -p "$img"
t0=$(date +%s.%N)
(cd "$ROOT" && CGO_ENABLED=0 go build -trimpath -ldflags=-s -o "$img/syncloop.tmp" .)
mv "$img/syncloop.tmp" "$img/syncloop"
log "built syncloop in $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s"

src=$(cat "$img/syncloop" /bin/busybox "$HERE/mkimg.py" | sha256sum | cut -c1-64)
tar=$img/syncloop-relay-$TAG.tar
if [ ! -s "$tar" ] || [ "$(cat "$tar.src" 2>/dev/null)" != "$src" ]; then
	arch=$(dpkg --print-architecture 2>/dev/null || go env GOARCH)
	# /tmp for sh's here-documents; the chart mounts /host, /state and the journal.
	python3 "$HERE/mkimg.py" --arch "$arch" --tag "$REF" --entrypoint /usr/local/bin/syncloop --cmd relay \
		--dir bin --file bin/busybox=/bin/busybox --link bin/sh=busybox --link bin/chroot=busybox \
		--dir usr --dir usr/local --dir usr/local/bin --file usr/local/bin/syncloop="$img/syncloop" \
		--dir tmp "$tar"
	echo "$src" >"$tar.src"
fi
ctr -a "$SOCK" -n k8s.io images import "$tar" >/dev/null
ctr -a "$SOCK" -n k8s.io images ls -q | grep -qx "$REF" || die "imported $tar but containerd does not list $REF"
echo "image=$REF"
echo "tar=$tar"
