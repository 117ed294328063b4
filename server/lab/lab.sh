#!/usr/bin/env bash
# lab.sh — a real kubelet on this machine, for reading syncloop beside a live journal.
#
# It runs a kubelet built from k8s.io/kubernetes at a tag, standalone (no API server),
# against its own containerd + runc, at -v=4, logging into the journal as kubelet.service,
# with a static pod, probe-me, whose liveness probe points at a port nothing listens on,
# a second one, quiet, that only the periodic resync (SYNC) ever touches, and a third,
# scratch, with an emptyDir volume for the volume manager to mount. A scenario then edits
# probe-me's manifest so that the loop also sees UPDATE and REMOVE, and deletes and
# restores scratch's, so that its volume is torn down and mounted anew.
# `stop` undoes everything `start` changed: processes (by PID), mounts, sysctls, cgroups,
# and the directories the tools create at hard-coded paths (only those it created).
#
# Needs Linux, root, and either Debian's packages (containerd runc busybox-static, which it
# installs) or those commands already present; Go and python3; the Go module proxy.
set -euo pipefail

SELF=$(readlink -f "${BASH_SOURCE[0]}")
HERE=$(dirname "$SELF")

usage() {
	cat <<'EOF'
usage: lab.sh start|stop|status|build [flags]

  start    set up and start the lab; prints key=value lines on stdout, among them
           cursor=<journal cursor just before the kubelet started>
  stop     undo everything start did (safe to run twice, or after a failed start)
  status   print key=value lines about a running lab
  build    only build (or find in the cache) the kubelet; prints its path

flags (each also as an environment variable):
  --tag TAG             kubelet tag to build and run (LAB_TAG, default v1.31.0)
  --dir DIR             the lab's work directory (LAB_DIR, default /tmp/syncloop-lab)
  --update-after SECS   relabel the pod (SyncLoop UPDATE) this long after the kubelet
                        started (LAB_UPDATE_AFTER, default 120; 0 = never)
  --remove-after SECS   delete the manifest (SyncLoop REMOVE) (LAB_REMOVE_AFTER, default 180)
  --readd-after SECS    put it back with a new uid (SyncLoop ADD) (LAB_READD_AFTER, default 200)
  --scratch-remove-after SECS
                        delete scratch's manifest, the pod with an emptyDir volume: its
                        volume is unmounted and torn down (LAB_SCRATCH_REMOVE_AFTER, default 60)
  --scratch-readd-after SECS
                        restore it with a new uid: a new volume is mounted
                        (LAB_SCRATCH_READD_AFTER, default 80)
  --log-format FMT      text or json (LAB_LOG_FORMAT, default text)
  --keep-journald       given to start or stop: leave a journald the lab started running,
                        with its journal, after stop (LAB_KEEP_JOURNALD=1)
  --cluster             a one-node cluster (LAB_CLUSTER=1): etcd and kube-apiserver on
                        loopback, the kubelet registered as node pair-worker, pod networking
                        by CNI, no static pods and no scenario; prints kubeconfig=PATH
                        (cluster.sh); build with it builds etcd, kube-apiserver and kubectl
  --controllers         --cluster with kube-controller-manager and kube-scheduler
                        (LAB_CONTROLLERS=1), which a DaemonSet needs
EOF
}

log() { printf '[lab %s] %s\n' "$(date -u +%T)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

TAG=${LAB_TAG:-v1.31.0}
DIR=${LAB_DIR:-/tmp/syncloop-lab}
UPDATE_AFTER=${LAB_UPDATE_AFTER:-120}
REMOVE_AFTER=${LAB_REMOVE_AFTER:-180}
READD_AFTER=${LAB_READD_AFTER:-200}
SCRATCH_REMOVE_AFTER=${LAB_SCRATCH_REMOVE_AFTER:-60}
SCRATCH_READD_AFTER=${LAB_SCRATCH_READD_AFTER:-80}
LOG_FORMAT=${LAB_LOG_FORMAT:-text}
KEEP_JOURNALD=${LAB_KEEP_JOURNALD:-0}
CLUSTER=${LAB_CLUSTER:-0}
CONTROLLERS=${LAB_CONTROLLERS:-0}
NODE=lab              # --hostname-override: the pod is default/probe-me-lab
PKGS=(containerd runc busybox-static)
CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/syncloop/lab

CMD=${1:-}
[ $# -gt 0 ] && shift
while [ $# -gt 0 ]; do
	case $1 in
	--tag) TAG=$2; shift ;;
	--dir) DIR=$2; shift ;;
	--update-after) UPDATE_AFTER=$2; shift ;;
	--remove-after) REMOVE_AFTER=$2; shift ;;
	--readd-after) READD_AFTER=$2; shift ;;
	--scratch-remove-after) SCRATCH_REMOVE_AFTER=$2; shift ;;
	--scratch-readd-after) SCRATCH_READD_AFTER=$2; shift ;;
	--log-format) LOG_FORMAT=$2; shift ;;
	--keep-journald) KEEP_JOURNALD=1 ;;
	--cluster) CLUSTER=1 ;;
	--controllers) CLUSTER=1; CONTROLLERS=1 ;;
	-h | --help) usage; exit 0 ;;
	*) usage >&2; die "unknown flag $1" ;;
	esac
	shift
done
case $TAG in v1.*) ;; *) die "--tag $TAG: want a Kubernetes tag like v1.31.0" ;; esac
case $LOG_FORMAT in text | json) ;; *) die "--log-format $LOG_FORMAT: want text or json" ;; esac
for n in "$UPDATE_AFTER" "$REMOVE_AFTER" "$READD_AFTER" "$SCRATCH_REMOVE_AFTER" "$SCRATCH_READD_AFTER"; do
	case $n in '' | *[!0-9]*) die "scenario times are whole seconds, got '$n'" ;; esac
done
[ "$CONTROLLERS" = 1 ] && CLUSTER=1
DIR=$(realpath -m "$DIR")
STATE=$DIR/state
SOCK=$DIR/containerd/containerd.sock
KUBELET=$CACHE/kubelet-$TAG
# shellcheck source=cluster.sh
. "$HERE/cluster.sh"

# Paths the tools create outside $DIR whatever they are told: containerd's shim sockets
# and fifos, the kubelet's device-plugin socket and container-log symlinks, journald's
# sockets and journal. stop removes those that did not exist before start.
hardcoded_paths() {
	echo /run/containerd /var/lib/kubelet /var/log/containers /var/log/pods /run/mount
	echo /run/systemd/journal /run/systemd /run/log/journal
	echo /var/log/journal/"$(cat /etc/machine-id 2>/dev/null)"
	cluster_paths
}
# The sysctls the kubelet sets (setupKernelTunables in pkg/kubelet/cm).
SYSCTLS=(vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops
	kernel.keys.root_maxkeys kernel.keys.root_maxbytes)
cluster_init

# ---- state: key=value lines appended as start goes, so stop can undo a half-done start ----

state_add() { echo "$1=$2" >>"$STATE"; }
state_get() { [ -f "$STATE" ] && awk -F= -v k="$1" '$1 == k { v = substr($0, length(k) + 2) } END { print v }' "$STATE"; }
state_all() { [ -f "$STATE" ] && awk -F= -v k="$1" '$1 == k { print substr($0, length(k) + 2) }' "$STATE"; }

# A PID is recorded with its start time, so a recycled PID is never signalled.
starttime() { awk '{ sub(/^.*\) /, ""); print $20 }' "/proc/$1/stat" 2>/dev/null; }
record_pid() { state_add "pid_$1" "$2:$(starttime "$2")"; }
alive() { # alive PID:STARTTIME
	local pid=${1%%:*} st=${1#*:}
	[ -n "$pid" ] && [ -d "/proc/$pid" ] && [ "$(starttime "$pid")" = "$st" ]
}
stop_pid() { # stop_pid NAME GRACE_SECONDS
	local rec i
	rec=$(state_get "pid_$1")
	[ -n "$rec" ] && alive "$rec" || return 0
	kill -TERM "${rec%%:*}" 2>/dev/null || true
	for ((i = 0; i < $2 * 10; i++)); do alive "$rec" || return 0; sleep 0.1; done
	log "$1 (pid ${rec%%:*}) ignored SIGTERM for $2 s: SIGKILL"
	kill -KILL "${rec%%:*}" 2>/dev/null || true
	for ((i = 0; i < 50; i++)); do alive "$rec" || return 0; sleep 0.1; done
}

stage_start() { STAGE_T0=$(date +%s.%N); }
stage_end() { # stage_end NAME
	local s
	s=$(awk -v a="$STAGE_T0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
	log "stage $1: ${s}s"
	[ -d "$DIR" ] && echo "$1 $s" >>"$DIR/timings"
	echo "stage_$1=$s"
}

need_root_linux() {
	[ "$(uname -s)" = Linux ] || die "the lab runs a kubelet, so it needs Linux (this is $(uname -s))"
	[ "$(id -u)" = 0 ] || die "the lab needs root: it installs packages, starts containerd and a kubelet, mounts and sets sysctls. Try: sudo $SELF $CMD"
}

# ---- 1. packages ----------------------------------------------------------------------------

installed() { [ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" = "install ok installed" ]; }

packages() {
	local missing=() p
	for p in "${PKGS[@]}"; do installed "$p" || missing+=("$p"); done
	[ ${#missing[@]} -eq 0 ] && return 0
	command -v apt-get >/dev/null || die "missing ${missing[*]}, and there is no apt-get: install containerd, runc and a static busybox yourself"
	log "installing ${missing[*]}"
	local apt=(apt-get -o DPkg::Lock::Timeout=600 -y -q)
	# Only refresh the package lists when they do not know a package (a fresh machine).
	for p in "${missing[@]}"; do
		if ! apt-cache show "$p" >/dev/null 2>&1; then "${apt[@]}" update >&2; break; fi
	done
	DEBIAN_FRONTEND=noninteractive "${apt[@]}" install --no-install-recommends "${missing[@]}" >&2
}

# ---- 2. the kubelet, built from the module proxy and cached by tag ------------------------------

build_kubelet() {
	if [ -x "$KUBELET" ] && "$KUBELET" --version 2>/dev/null | grep -qx "Kubernetes $TAG"; then
		return 0
	fi
	command -v go >/dev/null || die "building the kubelet needs Go (https://go.dev/dl/)"
	local b=$CACHE/build-$TAG kmod gover minor staging
	mkdir -p "$b"
	log "building kubelet $TAG in $b (nice 19; ~4 min and ~1.8 GB of Go build cache on 2 cores)"
	(
		cd "$b"
		go mod download k8s.io/kubernetes@"$TAG"
		kmod=$(go mod download -json k8s.io/kubernetes@"$TAG" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
		[ -f "$kmod" ] || die "no go.mod for k8s.io/kubernetes@$TAG"
		gover=$(awk '/^go /{ print $2; exit }' "$kmod")
		# k8s.io/kubernetes requires its staging modules at v0.0.0 and replaces them with
		# ./staging/... paths, which a module cannot use; each is published as
		# k8s.io/<name> v0.<minor>.<patch> for tag v1.<minor>.<patch>.
		staging=v0.${TAG#v1.}
		{
			printf 'module example.com/kubeletbuild\n\ngo %s\n\nrequire k8s.io/kubernetes %s\n\nreplace (\n' "$gover" "$TAG"
			awk -v v="$staging" '$2 == "=>" && $3 ~ /^\.\/staging\// { print "\t" $1 " => " $1 " " v }' "$kmod"
			printf ')\n'
		} >go.mod
		printf '//go:build tools\n\npackage tools\n\nimport _ "k8s.io/kubernetes/cmd/kubelet"\n' >tools.go
		GOFLAGS=-mod=mod go mod tidy >tidy.log 2>&1 || { cat tidy.log >&2; die "go mod tidy failed (log above)"; }
		minor=${TAG#v1.}
		minor=${minor%%.*}
		local ld="-X k8s.io/component-base/version.gitVersion=$TAG -X k8s.io/component-base/version.gitMajor=1"
		ld+=" -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean"
		nice -n 19 go build -ldflags "$ld" -o "$KUBELET.tmp" k8s.io/kubernetes/cmd/kubelet
		mv "$KUBELET.tmp" "$KUBELET"
	)
	"$KUBELET" --version | grep -qx "Kubernetes $TAG" || die "built $KUBELET but it does not report $TAG"
}

# ---- 3. images: pause and busybox, as docker-archive tarballs -----------------------------------

images() {
	local img=$CACHE/images arch
	mkdir -p "$img"
	arch=$(dpkg --print-architecture 2>/dev/null || go env GOARCH)
	# Keyed by content, not modification time: a fresh clone (CI's every run) has
	# newer files than the cache, with the same bytes.
	local src
	src=$(cat "$HERE/pause/main.go" "$HERE/mkimg.py" | sha256sum)
	if [ ! -s "$img/pause.tar" ] || [ "$(cat "$img/pause.src" 2>/dev/null)" != "$src" ]; then
		(cd "$HERE/pause" && CGO_ENABLED=0 go build -trimpath -ldflags=-s -o "$img/pause" .)
		python3 "$HERE/mkimg.py" --arch "$arch" --tag localhost/pause:lab --cmd /pause \
			--file pause="$img/pause" "$img/pause.tar"
		echo "$src" >"$img/pause.src"
	fi
	if [ ! -s "$img/busybox.tar" ] || [ /bin/busybox -nt "$img/busybox.tar" ]; then
		python3 "$HERE/mkimg.py" --arch "$arch" --tag localhost/busybox:lab --cmd /bin/sh \
			--dir bin --file bin/busybox=/bin/busybox --link bin/sh=busybox --link bin/sleep=busybox \
			--link bin/httpd=busybox --dir tmp "$img/busybox.tar"
	fi
	IMAGES=("$img/pause.tar" "$img/busybox.tar")
}

# ---- 4. journald, only if none answers -----------------------------------------------------------

journald() {
	if systemd-cat -t syncloop-lab true 2>/dev/null; then return 0; fi
	local j=/lib/systemd/systemd-journald i
	[ -x "$j" ] || die "no journald answers and $j is missing (apt-get install systemd)"
	log "no journald answers: starting $j"
	setsid "$j" </dev/null >"$DIR/journald.log" 2>&1 &
	record_pid journald $!
	for ((i = 0; i < 100; i++)); do
		systemd-cat -t syncloop-lab true 2>/dev/null && return 0
		sleep 0.1
	done
	die "journald did not answer in 10 s (see $DIR/journald.log)"
}

# ---- 5. containerd, all state under $DIR -----------------------------------------------------------

containerd_start() {
	mkdir -p "$DIR/containerd" "$DIR/cni"
	sed "s|@DIR@|$DIR|g" "$HERE/containerd.toml" >"$DIR/containerd/config.toml"
	rm -f "$SOCK"
	setsid containerd --config "$DIR/containerd/config.toml" </dev/null >"$DIR/containerd/containerd.log" 2>&1 &
	record_pid containerd $!
	local i
	for ((i = 0; i < 100; i++)); do
		ctr -a "$SOCK" version >/dev/null 2>&1 && break
		alive "$(state_get pid_containerd)" || { tail -20 "$DIR/containerd/containerd.log" >&2; die "containerd exited"; }
		sleep 0.1
	done
	local t
	for t in "${IMAGES[@]}"; do ctr -a "$SOCK" -n k8s.io images import "$t" >/dev/null; done
}

# ---- 6. the kubelet, as kubelet.service in the journal ---------------------------------------------

# free_ports N prints N distinct loopback ports nothing listens on now.
free_ports() {
	python3 -c 'import socket, sys
ss = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in ss: s.bind(("127.0.0.1", 0))
print(*[s.getsockname()[1] for s in ss])' "$1"
}

# The manifest is written whole and renamed, so the kubelet never reads half a file.
manifest() { # manifest UID REVISION
	sed -e "s|@UID@|$1|" -e "s|@REVISION@|$2|" -e "s|@WEBPORT@|$(state_get web_port)|g" \
		-e "s|@DEADPORT@|$(state_get dead_port)|g" "$HERE/probe-me.yaml" >"$DIR/manifests/.probe-me.tmp"
	mv "$DIR/manifests/.probe-me.tmp" "$DIR/manifests/probe-me.yaml"
}

scratch() { # scratch UID
	sed -e "s|@UID@|$1|" "$HERE/scratch.yaml" >"$DIR/manifests/.scratch.tmp"
	mv "$DIR/manifests/.scratch.tmp" "$DIR/manifests/scratch.yaml"
}

# journald marks an entry with _SYSTEMD_UNIT from the name=systemd cgroup of its sender.
# Without systemd as PID 1 nothing puts the kubelet there, so the launcher does it itself.
unit_cgroup() {
	if [ "$(stat -fc %T /sys/fs/cgroup/unified 2>/dev/null)" = cgroup2fs ]; then
		echo /sys/fs/cgroup/unified/system.slice/kubelet.service # hybrid hierarchy
	elif [ "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs ]; then
		echo /sys/fs/cgroup/system.slice/kubelet.service # unified only
	else
		echo /sys/fs/cgroup/systemd/system.slice/kubelet.service # legacy name=systemd
	fi
}

# The journal cursor of a marker entry written just now: the lab's span starts after it.
mark() { # mark MESSAGE
	local token i c
	token="syncloop-lab $(date +%s%N)"
	echo "$token $1" | systemd-cat -t syncloop-lab
	for ((i = 0; i < 50; i++)); do
		c=$(journalctl -t syncloop-lab -n 20 -o json --no-pager 2>/dev/null |
			python3 -c 'import json, sys
for l in sys.stdin:
    e = json.loads(l)
    if str(e.get("MESSAGE", "")).startswith(sys.argv[1]): print(e["__CURSOR"])' "$token" | tail -1)
		[ -n "$c" ] && { echo "$c"; return 0; }
		sleep 0.1
	done
	die "cannot find the lab's marker entry in the journal"
}

kubelet_start() {
	mkdir -p "$DIR/manifests" "$DIR/root" "$DIR/podlogs"
	local ports
	read -ra ports <<<"$(free_ports 4)"
	state_add web_port "${ports[0]}"
	state_add dead_port "${ports[1]}" # the liveness probe's: nothing listens there
	state_add kubelet_port "${ports[2]}"
	state_add healthz_port "${ports[3]}"
	sed -e "s|@DIR@|$DIR|g" -e "s|@PORT@|$(state_get kubelet_port)|" \
		-e "s|@HEALTHZPORT@|$(state_get healthz_port)|" "$HERE/kubelet-config.yaml" >"$DIR/kubelet-config.yaml"
	if [ "$CLUSTER" != 1 ]; then # a cluster's pods come from its API server
		manifest 5f0c3a52-1d7e-4c1b-9a44-7e2b7c9d0001 1
		cp "$HERE/quiet.yaml" "$DIR/manifests/.quiet.tmp" && mv "$DIR/manifests/.quiet.tmp" "$DIR/manifests/quiet.yaml"
		scratch 5f0c3a52-1d7e-4c1b-9a44-7e2b7c9d5c01
	fi
	local cg
	cg=$(unit_cgroup)
	[ -d "$cg" ] || { mkdir -p "$cg" && state_add created_cgroup "$cg"; }
	local args=(--config="$DIR/kubelet-config.yaml" --root-dir="$DIR/root" --cert-dir="$DIR/root/pki"
		--hostname-override="$NODE" -v=4)
	[ "$CLUSTER" = 1 ] && args+=("$(cluster_kubelet_args)")
	[ "$LOG_FORMAT" = json ] && args+=(--logging-format=json)
	rm -f "$DIR/kubelet.pid" # a stopped lab's, in a --dir used again
	CURSOR=$(mark "kubelet $TAG starting (log format $LOG_FORMAT)")
	state_add cursor "$CURSOR"
	state_add started "$(date +%s)"
	# shellcheck disable=SC2016 # expanded by the inner bash
	setsid bash -c 'echo $$ >"$1"; echo $$ >"$2/cgroup.procs"; shift 2; exec systemd-cat -t kubelet "$@"' \
		_ "$DIR/kubelet.pid" "$cg" "$KUBELET" "${args[@]}" </dev/null >/dev/null 2>"$DIR/kubelet.launch.log" &
	local i
	for ((i = 0; i < 50; i++)); do [ -s "$DIR/kubelet.pid" ] && break; sleep 0.1; done
	record_pid kubelet "$(cat "$DIR/kubelet.pid")"
}

# The scenario runs detached and logs each step to the journal, so a reader sees why the
# loop saw UPDATE or REMOVE. Its steps run in the order of their times.
scenario() {
	local t0 step secs what
	t0=$(state_get started)
	at() { local w=$((t0 + $1 - $(date +%s))); [ "$w" -gt 0 ] && sleep "$w"; return 0; }
	local steps
	steps=$(printf '%s\n' "$UPDATE_AFTER update" "$REMOVE_AFTER remove" "$READD_AFTER readd" \
		"$SCRATCH_REMOVE_AFTER scratch-remove" "$SCRATCH_READD_AFTER scratch-readd" | sort -n -s -k1,1)
	while read -r step; do
		read -r secs what <<<"$step"
		[ "$secs" -gt 0 ] || continue
		at "$secs"
		case $what in
		update) manifest 5f0c3a52-1d7e-4c1b-9a44-7e2b7c9d0001 2 ;;
		remove) rm -f "$DIR/manifests/probe-me.yaml" ;;
		readd) manifest 5f0c3a52-1d7e-4c1b-9a44-7e2b7c9d0002 3 ;;
		scratch-remove) rm -f "$DIR/manifests/scratch.yaml" ;;
		scratch-readd) scratch 5f0c3a52-1d7e-4c1b-9a44-7e2b7c9d5c02 ;;
		esac
		echo "syncloop-lab scenario: $what at +$secs s" | systemd-cat -t syncloop-lab
	done <<<"$steps"
}

wait_journal() { # wait_journal SUBSTRING SECONDS
	local i
	for ((i = 0; i < $2 * 2; i++)); do
		# not grep -q: under pipefail, journalctl's SIGPIPE would fail the pipeline
		journalctl -u kubelet --after-cursor="$CURSOR" -o cat --no-pager 2>/dev/null | grep -F "$1" >/dev/null && return 0
		alive "$(state_get pid_kubelet)" || return 1
		sleep 0.5
	done
	return 1
}

# shellcheck disable=SC2317 # called by trap
start_failed() {
	local rc=$?
	[ "$rc" -eq 0 ] && return
	log "start failed: undoing"
	cmd_stop || true
	exit "$rc"
}

cmd_start() {
	need_root_linux
	if [ -f "$STATE" ]; then
		alive "$(state_get pid_kubelet)" && die "a lab is already running in $DIR (stop it with: $SELF stop --dir $DIR)"
		log "a previous lab in $DIR was not stopped: stopping it first"
		cmd_stop
	fi
	mkdir -p "$DIR"
	: >"$STATE"
	: >"$DIR/timings"
	# Anything that fails from here on leaves the machine as it was.
	trap start_failed EXIT
	trap 'exit 130' INT TERM
	state_add tag "$TAG"
	state_add keep_journald "$KEEP_JOURNALD"
	local p
	for p in $(hardcoded_paths); do [ -e "$p" ] || state_add absent "$p"; done
	sysctl "${SYSCTLS[@]}" | sed 's/ = /=/' >"$DIR/sysctl.orig"
	find /sys/fs/cgroup -mindepth 1 -maxdepth 4 -type d 2>/dev/null | sort >"$DIR/cgroups.before"

	stage_start; packages; stage_end apt
	stage_start; build_kubelet; cluster_build; stage_end build
	stage_start; images; cluster_images; stage_end images
	stage_start; journald; containerd_start; stage_end containerd
	[ "$CLUSTER" = 1 ] && { stage_start; cluster_start; stage_end cluster; }
	stage_start
	kubelet_start
	if [ "$CLUSTER" != 1 ]; then
		setsid "$SELF" _scenario --dir "$DIR" --update-after "$UPDATE_AFTER" --remove-after "$REMOVE_AFTER" \
			--readd-after "$READD_AFTER" --scratch-remove-after "$SCRATCH_REMOVE_AFTER" \
			--scratch-readd-after "$SCRATCH_READD_AFTER" </dev/null >"$DIR/scenario.log" 2>&1 &
		record_pid scenario $!
	fi
	wait_journal "SyncLoop ADD" 60 || {
		journalctl -u kubelet --after-cursor="$CURSOR" -o cat --no-pager | tail -30 >&2
		die "the kubelet did not log SyncLoop ADD within 60 s (its log is above)"
	}
	stage_end kubelet_to_add
	[ "$CLUSTER" = 1 ] && { stage_start; cluster_ready; stage_end node_ready; }
	trap - EXIT INT TERM
	echo "dir=$DIR"
	echo "cursor=$CURSOR"
	echo "kubelet=$KUBELET"
	echo "kubelet_pid=$(state_get pid_kubelet | cut -d: -f1)"
	if [ "$CLUSTER" = 1 ]; then cluster_print; else echo "pod=default/probe-me-$NODE"; fi
	log "running: journalctl -u kubelet --after-cursor='$CURSOR' -f   (stop with: $SELF stop --dir $DIR)"
}

# ---- stop: undo, in the reverse order ---------------------------------------------------------------

ctr_() { timeout 20 ctr -a "$SOCK" -n k8s.io "$@"; }

cmd_stop() {
	need_root_linux
	[ -f "$STATE" ] || { log "nothing to stop in $DIR"; return 0; }
	[ "$(state_get keep_journald)" = 1 ] && KEEP_JOURNALD=1
	set +e
	local rec c p i
	log "stopping the lab in $DIR"
	stop_pid scenario 2
	cluster_drain
	# Let the kubelet stop the pod itself (REMOVE), as it would on a node being drained.
	if alive "$(state_get pid_kubelet)" && [ -n "$(ls "$DIR/manifests")" ]; then
		rm -f "$DIR/manifests/"*.yaml
		log "removed the manifest; waiting for the kubelet to stop the pod"
		for ((i = 0; i < 100; i++)); do
			[ -z "$(ctr_ tasks ls -q 2>/dev/null)" ] && break
			sleep 0.1
		done
	fi
	log "stopping the kubelet"
	stop_pid kubelet 10
	log "removing containers, stopping containerd"
	if alive "$(state_get pid_containerd)"; then
		# The kubelet leaves exited containers for its garbage collector; any task still
		# there holds a rootfs mount and processes: rm -f kills it first.
		for c in $(ctr_ tasks ls -q 2>/dev/null); do ctr_ tasks rm -f "$c" >/dev/null 2>&1; done
		for c in $(ctr_ containers ls -q 2>/dev/null); do ctr_ containers rm "$c" >/dev/null 2>&1; done
	fi
	stop_pid containerd 10
	cluster_stop
	# Shims outlive containerd by design; they carry our socket path on their command line.
	for p in /proc/[0-9]*; do
		case "$({ tr '\0' ' ' <"$p/cmdline"; } 2>/dev/null)" in *"-address $SOCK "*) ;; *) continue ;; esac
		log "killing leftover shim ${p#/proc/}"
		kill -KILL "${p#/proc/}" 2>/dev/null
	done
	log "unmounting, restoring sysctls, removing cgroups and directories"
	# Mounts under $DIR (the kubelet bind-mounts its root dir; containerd its rootfs and shm),
	# deepest first.
	for ((i = 0; i < 5; i++)); do
		local mounts
		mounts=$(awk -v d="$DIR/" '{ m = $5; gsub(/\\040/, " ", m) } index(m "/", d) == 1 { print m }' /proc/self/mountinfo | sort -r)
		[ -z "$mounts" ] && break
		while read -r m; do umount "$m" 2>/dev/null || umount -l "$m"; done <<<"$mounts"
	done
	if [ -s "$DIR/sysctl.orig" ]; then
		while IFS='=' read -r k v; do
			[ "$(sysctl -n "$k")" = "$v" ] || sysctl -qw "$k=$v"
		done <"$DIR/sysctl.orig"
	fi
	# cgroups the containers and the kubelet unit left: new ones only, and only lab-shaped.
	if [ -f "$DIR/cgroups.before" ]; then
		find /sys/fs/cgroup -mindepth 1 -maxdepth 4 -type d 2>/dev/null | sort |
			comm -13 "$DIR/cgroups.before" - |
			grep -E '/(k8s\.io|kubelet\.service|system\.slice|kubepods[^/]*)(/|$)' |
			sort -r | while read -r c; do
			find "$c" -depth -type d -exec rmdir {} \; 2>/dev/null
		done
	fi
	for c in $(state_all created_cgroup); do rmdir "$c" 2>/dev/null; done
	if [ "$KEEP_JOURNALD" != 1 ]; then
		stop_pid journald 5
	elif alive "$(state_get pid_journald)"; then
		log "left journald (pid $(state_get pid_journald | cut -d: -f1)) running, with the lab's journal; stop it with kill when done"
	fi
	# Paths the tools hard-code, removed only if they did not exist before start.
	for p in $(state_all absent | sort -r); do
		[ -e "$p" ] || continue
		case $p in
		/run/systemd/journal | /run/log/journal | /var/log/journal/*)
			[ "$KEEP_JOURNALD" = 1 ] || alive "$(state_get pid_journald)" || rm -rf "$p" ;;
		/var/lib/cni) # libcni's cache: our network's results, then what is left empty
			rm -f "$p"/results/syncloop-lab-*
			find "$p" -depth -type d -empty -delete ;;
		/run/systemd | /run/containerd | /run/mount | /run/netns) # others may use them by now
			find "$p" -depth \( -type d -empty -o -name utab -size 0 \) -delete ;;
		"$HOME/.kube") # kubectl's cache; a kubeconfig written there meanwhile stays
			rm -rf "$p/cache" "$p/http-cache"; rmdir "$p" 2>/dev/null ;;
		*) rm -rf "$p" ;;
		esac
	done
	set -e
	leftovers
	rm -rf "$DIR/root" "$DIR/containerd" "$DIR/podlogs"
	mv "$STATE" "$STATE.stopped"
	log "stopped; nothing of the lab is left outside $DIR (timings and logs are in $DIR)"
}

# leftovers reports (and fails on) anything stop could not undo.
leftovers() {
	local bad=0 p
	for p in $(state_all pid_journald) $(state_all pid_containerd) $(state_all pid_kubelet) $(state_all pid_scenario) \
		$(for n in $(cluster_procs); do state_all "pid_$n"; done); do
		if alive "$p" && { [ "$KEEP_JOURNALD" != 1 ] || [ "$p" != "$(state_get pid_journald)" ]; }; then
			log "still running: pid ${p%%:*}"; bad=1
		fi
	done
	if awk -v d="$DIR/" 'index($5 "/", d) == 1 { found = 1 } END { exit !found }' /proc/self/mountinfo; then
		log "still mounted under $DIR"; bad=1
	fi
	if [ -s "$DIR/sysctl.orig" ]; then
		while IFS='=' read -r k v; do
			[ "$(sysctl -n "$k")" = "$v" ] || { log "sysctl $k is $(sysctl -n "$k"), was $v"; bad=1; }
		done <"$DIR/sysctl.orig"
	fi
	return $bad
}

cmd_status() {
	[ -f "$STATE" ] || { echo "running=false"; return 0; }
	local n rec
	echo "running=$(alive "$(state_get pid_kubelet)" && echo true || echo false)"
	echo "dir=$DIR"
	echo "tag=$(state_get tag)"
	echo "cursor=$(state_get cursor)"
	if [ -n "$(state_get apiserver_port)" ]; then
		TAG=$(state_get tag) CLUSTER=1 NODE=pair-worker cluster_print 2>/dev/null
	fi
	for n in journald containerd kubelet scenario $(cluster_procs); do
		rec=$(state_get "pid_$n")
		[ -n "$rec" ] || continue
		echo "${n}_pid=${rec%%:*}"
		echo "${n}_alive=$(alive "$rec" && echo true || echo false)"
	done
}

main() {
	case $CMD in
	start) cmd_start ;;
	stop) cmd_stop ;;
	status) cmd_status ;;
	build) build_kubelet; echo "$KUBELET"; [ "$CLUSTER" != 1 ] || { cluster_build; echo "$ETCD"; echo "$KUBECTL"; } ;;
	_scenario) CURSOR=$(state_get cursor); scenario ;;
	-h | --help | help) usage ;;
	*) usage >&2; exit 2 ;;
	esac
}

# One line, parsed whole before it runs: a lab.sh edited (git pull) while a lab runs
# does not derail the running copy, which would otherwise read on at a stale offset.
main; exit
