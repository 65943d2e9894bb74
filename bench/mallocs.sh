#!/bin/bash
# bench/mallocs.sh BUILD MODE [C D [ARGS...]]: heap allocations per request
# on braked's loop thread and its storage thread.
#
# Starts a fresh braked from BUILD in MODE durability (batched or strict;
# fresh_braked.sh), sets compare's generous task:* bucket, runs brake-bench
# at C connections x D in flight (default 16 x 16) for 4 s with ARGS passed
# on (e.g. --commit --tokens 10 for acquire + commit), and counts calls to
# glibc's malloc on each thread for 2 s in the middle of the run with a
# uprobe (`perf probe -x libc.so.6 --add malloc`, made here if missing;
# needs root and perf), against braked's own count of requests over the
# same 2 s. Prints requests, mallocs and mallocs per request per thread.
# docs/performance/24-twenty-fourth-pass.md has figures.
set -eu
B=$1; MODE=$2; C=${3:-16}; DEPTH=${4:-16}
shift $(($# < 4 ? $# : 4))
LIBC=$(ldd "$B/daemon/braked" | awk '$1 ~ /^libc\.so/ {print $3}')
if ! perf probe -l 2>/dev/null | grep -q 'probe_libc:malloc '; then
  perf probe -x "$LIBC" --add malloc > /dev/null 2>&1
fi
. "$(dirname "$0")/fresh_braked.sh"
DURABILITY=$MODE FreshBraked "$B"
GenerousBucket "$B"
"$B/bench/brake-bench" --socket "$D/s.sock" --connections "$C" \
  --depth "$DEPTH" --seconds 4 --warmup-seconds 0.5 --user cmp \
  --task-prefix "cmp-$MODE-${C}x$DEPTH-r1-" "$@" --json > "$D/run.json" &
BB=$!
sleep 1.5
# The loop thread is braked's first, the storage thread its second.
LOOP=$(ls "/proc/$P/task" | sed -n 1p)
STORAGE=$(ls "/proc/$P/task" | sed -n 2p)
requests() {
  "$B/ctl/brakectl" --socket "$D/s.sock" metrics |
    awk '$1 == "brake_requests_total" {s += $2} END {print s}'
}
R0=$(requests)
perf stat -e probe_libc:malloc -t "$LOOP" -x, -o "$D/loop.txt" -- sleep 2 &
perf stat -e probe_libc:malloc -t "$STORAGE" -x, -o "$D/storage.txt" -- sleep 2
wait %2 2> /dev/null || true
R1=$(requests)
wait $BB
kill -TERM $P; wait $P || true
N=$((R1 - R0))
for t in loop storage; do
  M=$(grep probe_libc:malloc "$D/$t.txt" | cut -d, -f1)
  awk -v t=$t -v m="$M" -v n=$N 'BEGIN {
    printf "%-8s %d mallocs / %d requests = %.4f per request\n", t, m, n, m / n
  }'
done
