# cluster.sh — sourced by lab.sh: `lab.sh start --cluster`, a one-node cluster from the modules.
#
# etcd (go.etcd.io/etcd/server/v3, at the version the tag's go.mod pins for its etcd client),
# kube-apiserver and kubectl (k8s.io/kubernetes, at the lab's tag), built through the module
# proxy and cached like the kubelet; certificates made here with openssl; etcd and the API
# server on loopback ports nothing else uses; the lab's kubelet registered as node pair-worker
# with a system:node:pair-worker client certificate; pod networking by Debian's CNI plugins
# (a bridge of the lab's own). With --controllers, kube-controller-manager and kube-scheduler
# too (a DaemonSet needs both); the course's exercise needs neither: its pod names its node.
#
# Everything lives in $DIR/cluster; stop removes what start made outside it (the bridge, the
# pods' network namespaces, the CNI plugins' cache) and nothing else.

CNI_BRIDGE=syncloop0
CNI_SUBNET=10.244.77.0/24
# The image of the course's exercise: made here (agnhost/), never pulled.
AGNHOST_IMAGE=registry.k8s.io/e2e-test-images/agnhost:2.47
CPKI=$DIR/cluster/pki

# cluster_init runs after the flags are read.
cluster_init() {
	[ "$CLUSTER" = 1 ] || return 0
	NODE=pair-worker
	PKGS+=(containernetworking-plugins openssl iproute2 curl)
	# The bridge plugin turns forwarding on for its gateway; stop puts it back.
	SYSCTLS+=(net.ipv4.ip_forward)
}

cluster_paths() { # hard-coded paths the cluster's tools create (see hardcoded_paths)
	[ "$CLUSTER" = 1 ] || return 0
	# containerd's pod network namespaces; libcni's result cache; kubectl's discovery cache
	# (a user's own kubectl run against the lab writes it, whatever KUBECONFIG says).
	echo /run/netns /var/lib/cni "$HOME/.kube"
}

cluster_procs() { echo etcd kube-apiserver kube-controller-manager kube-scheduler; }

# ---- builds: one scratch module per tag for the Kubernetes binaries, one per etcd version ----

# k8s_gomod prints the path of k8s.io/kubernetes@TAG's go.mod (downloading it).
k8s_gomod() {
	local kmod
	kmod=$(cd "$CACHE" && go mod download -json k8s.io/kubernetes@"$TAG" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
	[ -f "$kmod" ] || die "no go.mod for k8s.io/kubernetes@$TAG from the module proxy (is the tag right?)"
	echo "$kmod"
}

# etcd_version: the etcd the tag's Kubernetes is tested with, as its go.mod pins its client.
etcd_version() {
	awk '$1 == "go.etcd.io/etcd/client/v3" { print $2; exit }' "$(k8s_gomod)"
}

# build_k8s_cmd NAME: k8s.io/kubernetes/cmd/NAME at $TAG into $CACHE/NAME-$TAG.
build_k8s_cmd() {
	local name=$1 out=$CACHE/$1-$TAG b=$CACHE/build-$TAG-cluster
	local v=--version
	[ "$name" = kubectl ] && v="version --client"
	# shellcheck disable=SC2086 # two words for kubectl
	if [ -x "$out" ] && "$out" $v 2>/dev/null | grep " $TAG\$" >/dev/null; then return 0; fi
	command -v go >/dev/null || die "building $name needs Go (https://go.dev/dl/)"
	mkdir -p "$b"
	local t0 minor
	t0=$(date +%s)
	log "building $name $TAG in $b (nice 19; kube-apiserver takes 2-30 min on 2 cores, the rest less)"
	(
		cd "$b"
		if [ ! -f go.mod ] || [ ! -f tools.go ]; then
			local kmod gover
			kmod=$(k8s_gomod)
			gover=$(awk '/^go /{ print $2; exit }' "$kmod")
			# As build_kubelet: the staging modules by their published versions.
			{
				printf 'module example.com/clusterbuild\n\ngo %s\n\nrequire k8s.io/kubernetes %s\n\nreplace (\n' "$gover" "$TAG"
				awk -v v="v0.${TAG#v1.}" '$2 == "=>" && $3 ~ /^\.\/staging\// { print "\t" $1 " => " $1 " " v }' "$kmod"
				printf ')\n'
			} >go.mod
			{
				printf '//go:build tools\n\npackage tools\n\nimport (\n'
				for c in kube-apiserver kubectl kube-controller-manager kube-scheduler; do printf '\t_ "k8s.io/kubernetes/cmd/%s"\n' "$c"; done
				printf ')\n'
			} >tools.go
			GOFLAGS=-mod=mod go mod tidy >tidy.log 2>&1 || { cat tidy.log >&2; rm -f tools.go; die "go mod tidy failed in $b (log above)"; }
		fi
		minor=${TAG#v1.}
		minor=${minor%%.*}
		local ld="-X k8s.io/component-base/version.gitVersion=$TAG -X k8s.io/component-base/version.gitMajor=1"
		ld+=" -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean"
		nice -n 19 go build -ldflags "$ld" -o "$out.tmp" k8s.io/kubernetes/cmd/"$name"
		mv "$out.tmp" "$out"
	)
	log "built $name in $(($(date +%s) - t0)) s"
}

# build_etcd: go.etcd.io/etcd/server/v3 at etcd_version into $CACHE/etcd-VERSION.
build_etcd() {
	local v out b t0
	v=$(etcd_version)
	[ -n "$v" ] || die "k8s.io/kubernetes@$TAG's go.mod pins no go.etcd.io/etcd/client/v3: cannot tell which etcd to build"
	out=$CACHE/etcd-$v
	ETCD=$out
	if [ -x "$out" ] && "$out" --version 2>/dev/null | grep "etcd Version: ${v#v}" >/dev/null; then return 0; fi
	b=$CACHE/build-etcd-$v
	mkdir -p "$b"
	t0=$(date +%s)
	log "building etcd $v in $b (nice 19; ~2-5 min on 2 cores)"
	(
		cd "$b"
		if [ ! -f tools.go ]; then
			printf 'module example.com/etcdbuild\n\ngo 1.21\n\nrequire go.etcd.io/etcd/server/v3 %s\n' "$v" >go.mod
			printf '//go:build tools\n\npackage tools\n\nimport _ "go.etcd.io/etcd/server/v3"\n' >tools.go
			GOFLAGS=-mod=mod go mod tidy >tidy.log 2>&1 || { cat tidy.log >&2; rm -f tools.go; die "go mod tidy failed in $b (log above)"; }
		fi
		nice -n 19 go build -o "$out.tmp" go.etcd.io/etcd/server/v3
		mv "$out.tmp" "$out"
	)
	log "built etcd in $(($(date +%s) - t0)) s"
}

cluster_build() {
	[ "$CLUSTER" = 1 ] || return 0
	build_etcd
	local c
	for c in kube-apiserver kubectl; do build_k8s_cmd "$c"; done
	if [ "$CONTROLLERS" = 1 ]; then
		for c in kube-controller-manager kube-scheduler; do build_k8s_cmd "$c"; done
	fi
	KUBECTL=$CACHE/kubectl-$TAG
}

# The exercise's image, under its real name; its entrypoint /agnhost, as the real one's.
cluster_images() {
	[ "$CLUSTER" = 1 ] || return 0
	local img=$CACHE/images arch src
	arch=$(dpkg --print-architecture 2>/dev/null || go env GOARCH)
	src=$(cat "$HERE/agnhost/main.go" "$HERE/mkimg.py" | sha256sum)
	if [ ! -s "$img/agnhost.tar" ] || [ "$(cat "$img/agnhost.src" 2>/dev/null)" != "$src" ]; then
		(cd "$HERE/agnhost" && CGO_ENABLED=0 go build -trimpath -ldflags=-s -o "$img/agnhost" .)
		python3 "$HERE/mkimg.py" --arch "$arch" --tag "$AGNHOST_IMAGE" --entrypoint /agnhost --cmd netexec \
			--file agnhost="$img/agnhost" --dir tmp "$img/agnhost.tar"
		echo "$src" >"$img/agnhost.src"
	fi
	IMAGES+=("$img/agnhost.tar")
}

# ---- certificates -------------------------------------------------------------------------------

# cert NAME SUBJECT EXTENSIONS: a P-256 key and a certificate signed by the lab's CA, for a week.
cert() {
	openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$CPKI/$1.key" 2>/dev/null
	openssl req -new -key "$CPKI/$1.key" -subj "$2" -out "$CPKI/$1.csr" 2>/dev/null
	printf '%s\n' "$3" >"$CPKI/$1.ext"
	openssl x509 -req -in "$CPKI/$1.csr" -CA "$CPKI/ca.crt" -CAkey "$CPKI/ca.key" -CAcreateserial \
		-days 7 -sha256 -extfile "$CPKI/$1.ext" -out "$CPKI/$1.crt" 2>/dev/null || die "openssl could not sign $1's certificate"
	chmod 600 "$CPKI/$1.key"
}

pki() {
	mkdir -p "$CPKI"
	chmod 700 "$CPKI"
	openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$CPKI/ca.key" 2>/dev/null
	openssl req -x509 -new -key "$CPKI/ca.key" -subj "/CN=syncloop-lab-ca" -days 7 -sha256 \
		-addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
		-out "$CPKI/ca.crt" 2>/dev/null || die "openssl could not make the lab's CA"
	local server="keyUsage=critical,digitalSignature
extendedKeyUsage=serverAuth,clientAuth
subjectAltName=IP:127.0.0.1,DNS:localhost"
	local client="keyUsage=critical,digitalSignature
extendedKeyUsage=clientAuth"
	cert etcd "/CN=etcd" "$server"
	cert apiserver "/CN=kube-apiserver" "keyUsage=critical,digitalSignature
extendedKeyUsage=serverAuth
subjectAltName=IP:127.0.0.1,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
	cert apiserver-etcd-client "/CN=kube-apiserver-etcd-client" "$client"
	cert apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" "$client"
	cert admin "/O=system:masters/CN=syncloop-lab-admin" "$client"
	cert kubelet "/O=system:nodes/CN=system:node:$NODE" "$client"
	cert kube-controller-manager "/CN=system:kube-controller-manager" "$client"
	cert kube-scheduler "/CN=system:kube-scheduler" "$client"
	# The service-account token signing key pair.
	openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$CPKI/sa.key" 2>/dev/null
	openssl pkey -in "$CPKI/sa.key" -pubout -out "$CPKI/sa.pub" 2>/dev/null
	rm -f "$CPKI"/*.csr "$CPKI"/*.ext
}

# kubeconfig NAME: $DIR/cluster/NAME.kubeconfig for the client certificate NAME.
kubeconfig() {
	cat >"$DIR/cluster/$1.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: syncloop-lab
  cluster:
    server: https://127.0.0.1:$(state_get apiserver_port)
    certificate-authority: $CPKI/ca.crt
users:
- name: $1
  user:
    client-certificate: $CPKI/$1.crt
    client-key: $CPKI/$1.key
contexts:
- name: $1@syncloop-lab
  context: {cluster: syncloop-lab, user: $1, namespace: default}
current-context: $1@syncloop-lab
EOF
	chmod 600 "$DIR/cluster/$1.kubeconfig"
}

# ---- processes ----------------------------------------------------------------------------------

# spawn NAME CMD...: a detached process with its log in $DIR/cluster/NAME.log.
spawn() {
	local name=$1
	shift
	setsid "$@" </dev/null >"$DIR/cluster/$name.log" 2>&1 &
	record_pid "$name" $!
}

# await NAME SECONDS CHECK...: until CHECK succeeds, or NAME exits, or the time is up.
await() {
	local name=$1 secs=$2 i
	shift 2
	for ((i = 0; i < secs * 4; i++)); do
		"$@" >/dev/null 2>&1 && return 0
		alive "$(state_get "pid_$name")" || { tail -20 "$DIR/cluster/$name.log" >&2; die "$name exited (its log is above; all of it in $DIR/cluster/$name.log)"; }
		sleep 0.25
	done
	tail -20 "$DIR/cluster/$name.log" >&2
	die "$name did not answer in $secs s (its log is above)"
}

lab_kubectl() { "$KUBECTL" --kubeconfig "$DIR/cluster/admin.kubeconfig" "$@"; }

etcd_start() {
	local p=$CPKI
	spawn etcd "$ETCD" --name lab --data-dir "$DIR/cluster/etcd" \
		--listen-client-urls "https://127.0.0.1:$(state_get etcd_port)" \
		--advertise-client-urls "https://127.0.0.1:$(state_get etcd_port)" \
		--listen-peer-urls "http://127.0.0.1:$(state_get etcd_peer_port)" \
		--initial-advertise-peer-urls "http://127.0.0.1:$(state_get etcd_peer_port)" \
		--initial-cluster "lab=http://127.0.0.1:$(state_get etcd_peer_port)" \
		--cert-file "$p/etcd.crt" --key-file "$p/etcd.key" --client-cert-auth --trusted-ca-file "$p/ca.crt" \
		--unsafe-no-fsync --log-level warn
}

apiserver_start() {
	local p=$CPKI args
	args=(--bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port="$(state_get apiserver_port)"
		--etcd-servers="https://127.0.0.1:$(state_get etcd_port)" --etcd-cafile="$p/ca.crt"
		--etcd-certfile="$p/apiserver-etcd-client.crt" --etcd-keyfile="$p/apiserver-etcd-client.key"
		--cert-dir="$DIR/cluster/apiserver" --tls-cert-file="$p/apiserver.crt" --tls-private-key-file="$p/apiserver.key"
		--client-ca-file="$p/ca.crt" --kubelet-client-certificate="$p/apiserver-kubelet-client.crt"
		--kubelet-client-key="$p/apiserver-kubelet-client.key"
		--service-account-issuer=https://kubernetes.default.svc.cluster.local
		--service-account-key-file="$p/sa.pub" --service-account-signing-key-file="$p/sa.key"
		--service-cluster-ip-range=10.96.0.0/24 --authorization-mode=Node,RBAC --allow-privileged=true
		# The kubernetes Service's Endpoints may not hold a loopback address: no reconciler.
		--endpoint-reconciler-type=none --profiling=false -v=1)
	# Without a controller-manager nothing creates a namespace's "default" ServiceAccount
	# (the ServiceAccount admission plugin would refuse every pod for its lack) nor its
	# kube-root-ca.crt ConfigMap (the plugin's projected token volume would keep the pod in
	# ContainerCreating for want of it). The exercise's pod needs no API credentials, so
	# without --controllers the plugin is off and pods get no token; with them it is on.
	[ "$CONTROLLERS" = 1 ] || args+=(--disable-admission-plugins=ServiceAccount)
	spawn kube-apiserver "$CACHE/kube-apiserver-$TAG" "${args[@]}"
}

controllers_start() {
	[ "$CONTROLLERS" = 1 ] || return 0
	kubeconfig kube-controller-manager
	kubeconfig kube-scheduler
	local k=$DIR/cluster/kube-controller-manager.kubeconfig
	spawn kube-controller-manager "$CACHE/kube-controller-manager-$TAG" --kubeconfig="$k" \
		--authentication-kubeconfig="$k" --authorization-kubeconfig="$k" --secure-port=0 --leader-elect=false \
		--use-service-account-credentials=true --service-account-private-key-file="$CPKI/sa.key" \
		--root-ca-file="$CPKI/ca.crt" --cluster-signing-cert-file="$CPKI/ca.crt" \
		--cluster-signing-key-file="$CPKI/ca.key" -v=1
	k=$DIR/cluster/kube-scheduler.kubeconfig
	spawn kube-scheduler "$CACHE/kube-scheduler-$TAG" --kubeconfig="$k" --authentication-kubeconfig="$k" \
		--authorization-kubeconfig="$k" --secure-port=0 --leader-elect=false -v=1
}

# The pods' network: a bridge of the lab's own, addresses from host-local, state under $DIR.
cni_conf() {
	ip -o addr | grep -F " ${CNI_SUBNET%.*}." >/dev/null && die "$CNI_SUBNET is already used on this machine: edit CNI_SUBNET in $HERE/cluster.sh"
	ip link show "$CNI_BRIDGE" >/dev/null 2>&1 || state_add created_link "$CNI_BRIDGE"
	[ -x /usr/lib/cni/bridge ] || die "no /usr/lib/cni/bridge: apt-get install containernetworking-plugins"
	mkdir -p "$DIR/cni" "$DIR/cluster/cni-ipam"
	{ ls /run/netns 2>/dev/null || true; } | sort >"$DIR/cluster/netns.before"
	cat >"$DIR/cni/10-syncloop-lab.conflist" <<EOF
{
  "cniVersion": "0.4.0",
  "name": "syncloop-lab",
  "plugins": [{
    "type": "bridge", "bridge": "$CNI_BRIDGE", "isGateway": true, "ipMasq": false, "hairpinMode": true,
    "ipam": {"type": "host-local", "ranges": [[{"subnet": "$CNI_SUBNET"}]], "dataDir": "$DIR/cluster/cni-ipam"}
  }]
}
EOF
}

# cluster_start: after containerd, before the kubelet.
cluster_start() {
	[ "$CLUSTER" = 1 ] || return 0
	local ports
	read -ra ports <<<"$(free_ports 3)"
	state_add etcd_port "${ports[0]}"
	state_add etcd_peer_port "${ports[1]}"
	state_add apiserver_port "${ports[2]}"
	mkdir -p "$DIR/cluster/bin"
	ln -sfn "$KUBECTL" "$DIR/cluster/bin/kubectl"
	pki
	kubeconfig admin
	kubeconfig kubelet
	cni_conf
	etcd_start
	await etcd 30 curl -sf --cacert "$CPKI/ca.crt" --cert "$CPKI/apiserver-etcd-client.crt" \
		--key "$CPKI/apiserver-etcd-client.key" "https://127.0.0.1:$(state_get etcd_port)/health"
	apiserver_start
	await kube-apiserver 180 lab_kubectl get --raw=/readyz
	controllers_start
}

cluster_kubelet_args() {
	echo "--kubeconfig=$DIR/cluster/kubelet.kubeconfig"
}

# cluster_ready: the node registered and Ready (its network plugin up among the conditions).
cluster_ready() {
	[ "$CLUSTER" = 1 ] || return 0
	await kube-apiserver 120 lab_kubectl wait --for=condition=Ready "node/$NODE" --timeout=2s
	if [ "$CONTROLLERS" = 1 ]; then
		await kube-controller-manager 120 lab_kubectl -n default get serviceaccount default
	fi
}

cluster_print() {
	[ "$CLUSTER" = 1 ] || return 0
	KUBECTL=${KUBECTL:-$CACHE/kubectl-$TAG}
	echo "kubeconfig=$DIR/cluster/admin.kubeconfig"
	echo "kubectl=$KUBECTL"
	echo "apiserver=https://127.0.0.1:$(state_get apiserver_port)"
	echo "node=$NODE"
	log "kubectl: export KUBECONFIG=$DIR/cluster/admin.kubeconfig PATH=$DIR/cluster/bin:\$PATH"
}

# cluster_drain: before the kubelet stops, the API's pods go, so that the kubelet tears
# their sandboxes down itself (and the CNI plugin its addresses and veths).
cluster_drain() {
	[ -f "$DIR/cluster/admin.kubeconfig" ] && alive "$(state_get pid_kube-apiserver)" || return 0
	alive "$(state_get pid_kubelet)" || return 0
	KUBECTL=$CACHE/kubectl-$(state_get tag)
	[ -x "$KUBECTL" ] || return 0
	# No controller may make them again (a DaemonSet's) while they go.
	stop_pid kube-controller-manager 10
	stop_pid kube-scheduler 10
	log "deleting the cluster's pods; waiting for the kubelet to stop them"
	timeout 20 "$KUBECTL" --kubeconfig "$DIR/cluster/admin.kubeconfig" delete pods --all --all-namespaces \
		--grace-period=1 --wait=false >/dev/null 2>&1
	local i
	for ((i = 0; i < 300; i++)); do
		[ -z "$(ctr_ tasks ls -q 2>/dev/null)" ] && break
		sleep 0.1
	done
}

# cluster_stop: after the kubelet and containerd stopped.
cluster_stop() {
	local n ns
	for n in kube-scheduler kube-controller-manager kube-apiserver etcd; do stop_pid "$n" 10; done
	for n in $(state_all created_link); do
		ip link show "$n" >/dev/null 2>&1 && ip link delete "$n"
	done
	# Network namespaces containerd left (a sandbox removed without the CRI): ours only.
	if [ -f "$DIR/cluster/netns.before" ]; then
		for ns in $(ls /run/netns 2>/dev/null | sort | comm -13 "$DIR/cluster/netns.before" -); do
			case $ns in cni-*) ip netns delete "$ns" 2>/dev/null || { umount "/run/netns/$ns"; rm -f "/run/netns/$ns"; } ;; esac
		done
	fi
	rm -rf "$DIR/cluster/etcd" "$DIR/cluster/cni-ipam" "$DIR/cluster/apiserver"
}
