#!/usr/bin/env bash
# compare.sh — the load test side by side: two syncloop binaries (a
# baseline and a candidate) run `loadtest` in turn, RUNS times each,
# alternating, so that what else loads a shared machine falls on both
# alike; each run's report is printed with the load average at its start
# and end. Take the medians of each side. The order turns every run (base
# first, then the candidate first: ABBA): the runs themselves raise the
# load average, and the second of each pair would always run on a hotter
# machine.
#
#   server/loadtest/compare.sh BASE_BINARY CANDIDATE_BINARY [loadtest flags…]
#   RUNS=3 server/loadtest/compare.sh /tmp/base ./syncloop --rooms 50 --readers 10 --rate 1000 --duration 20s
#
# A baseline from another commit: git worktree add /tmp/base-src COMMIT &&
# (cd /tmp/base-src && go build -o /tmp/base .).
set -uo pipefail
if [ $# -lt 2 ]; then
	sed -n '2,12p' "$0" >&2
	exit 2
fi
base=$1 cand=$2
shift 2
for b in "$base" "$cand"; do
	[ -x "$b" ] || { echo "compare.sh: $b is not an executable" >&2; exit 2; }
done
for i in $(seq 1 "${RUNS:-3}"); do
	order=("$base" "$cand")
	if [ $((i % 2)) -eq 0 ]; then
		order=("$cand" "$base")
	fi
	for b in "${order[@]}"; do
		echo "== run $i: $b  (load average at start: $(cut -d' ' -f1-3 /proc/loadavg))"
		"$b" loadtest "$@" 2>&1 | grep -v '^loadtest: \(server\|[0-9]* readers connected\|sent\)'
		echo "== end of run $i: $b  (load average: $(cut -d' ' -f1-3 /proc/loadavg))"
	done
done
