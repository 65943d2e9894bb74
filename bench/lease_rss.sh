#!/bin/bash
# bench/lease_rss.sh BUILD [DEPTH]: braked's memory per open lease after a
# burst.
#
# Starts a fresh braked from BUILD (batched durability, max_open_leases 1e9)
# with compare's generous task:* token bucket, sends 16 x DEPTH acquires
# at once (brake-bench --once; default DEPTH 20000: 320,000 leases), none
# settled, and prints braked's RSS before and after (/proc/PID/status) over
# the leases open (brake_leases_open). The figure includes what the burst
# left resident besides the leases (batches that waited for the storage
# thread, SQLite's cache); brake-decide-bench --memory-subjects gives the
# engine's share alone. TASK_PREFIX in the environment names the tasks
# (default cmp-; compare's are cmp-batched-16x16-r1-, past the 15 bytes a
# string holds in place). docs/performance/17-seventeenth-pass.md has figures.
set -eu
B=$1; DEPTH=${2:-20000}
. "$(dirname "$0")/fresh_braked.sh"
FreshBraked "$B"
GenerousBucket "$B"
rss() { awk '$1 == "VmRSS:" { print $2 }' "/proc/$P/status"; }
BEFORE=$(rss)
"$B/bench/brake-bench" --socket "$D/s.sock" --connections 16 \
  --depth "$DEPTH" --once --seconds 120 --user cmp --task-prefix "${TASK_PREFIX:-cmp-}" \
  --json > "$D/run.json"
sleep 0.5  # the last batch stored
AFTER=$(rss)
OPEN=$("$B/ctl/brakectl" --socket "$D/s.sock" metrics | awk '$1 == "brake_leases_open" { print $2 }')
kill -TERM "$P"
wait "$P"
echo "open leases $OPEN  RSS $BEFORE -> $AFTER KiB  $(( (AFTER - BEFORE) * 1024 / OPEN )) bytes per open lease"
