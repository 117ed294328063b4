#!/usr/bin/env bash
# cluster.sh — the load test against the cluster shape: three nats-server
# nodes (built from the version go.mod requires) clustered on loopback, two
# `syncloop serve --nats` replicas, and `syncloop loadtest` spreading the
# load over them. The server's CPU and RSS it prints are the five
# processes' together (each is listed too).
#
#   server/loadtest/cluster.sh [loadtest flags…]
#   server/loadtest/cluster.sh --rooms 50 --readers 10 --rate 1000 --duration 20s
#
# SYNCLOOP=path/to/syncloop uses that binary (default: built from this tree).
set -euo pipefail
cd "$(dirname "$0")/../.."
work=$(mktemp -d "${TMPDIR:-/tmp}/syncloop-cluster-XXXXXX")
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	rm -rf "$work"
}
trap cleanup EXIT

go build -o "$work/nats-server" github.com/nats-io/nats-server/v2
bin=${SYNCLOOP:-}
if [ -z "$bin" ]; then
	go build -o "$work/syncloop" .
	bin=$work/syncloop
fi

freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }
client=() route=()
for i in 0 1 2; do client+=("$(freeport)"); route+=("$(freeport)"); done
routes="nats://127.0.0.1:${route[0]},nats://127.0.0.1:${route[1]},nats://127.0.0.1:${route[2]}"
urls="nats://127.0.0.1:${client[0]},nats://127.0.0.1:${client[1]},nats://127.0.0.1:${client[2]}"
for i in 0 1 2; do
	"$work/nats-server" -js -sd "$work/n$i" -n "n$i" -a 127.0.0.1 -p "${client[$i]}" \
		--cluster_name syncloop-load --cluster "nats://127.0.0.1:${route[$i]}" --routes "$routes" \
		>"$work/nats-$i.log" 2>&1 &
	pids+=("$!")
done
for i in 0 1 2; do
	for _ in $(seq 100); do
		if (echo >"/dev/tcp/127.0.0.1/${client[$i]}") 2>/dev/null; then break; fi
		sleep 0.1
	done
done
nats_pids=$(IFS=,; echo "${pids[*]}")
echo "cluster.sh: nats-server nodes $nats_pids on $urls" >&2
"$bin" loadtest --replicas 2 --nats "$urls" --pid "$nats_pids" "$@"
