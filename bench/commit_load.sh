#!/bin/bash
# bench/commit_load.sh BUILD C D [SECONDS [ARGS...]]: acquire + commit, the
# usual use.
#
# bench/compare measures acquires alone (its leases stay open); an agent
# commits each lease, and every commit writes a ledger row. This starts a
# fresh braked from BUILD (batched durability, max_open_leases 1e9) on a
# temporary socket and database, sets compare's generous task:* token
# bucket, runs brake-bench --commit --tokens 10 at C connections x D in
# flight for SECONDS (default 3; 0.5 s warm-up), with ARGS passed on to
# brake-bench (e.g. --spread --tasks 100000: a different task each
# acquire), and prints acquires/s, commits/s, the acquire p50 and, per
# braked thread (the loop, the storage thread), its user and system CPU and
# its minor page faults per acquire + commit over the run
# (/proc/PID/task/TID/stat). With COMMIT=0 in the environment it runs
# acquires alone, as bench/compare does (their leases stay open), and the
# figures are per acquire. SCOPES and LIMIT set the buckets (fresh_braked.sh):
# SCOPES='global user:* task:*' LIMIT=requests_per_second_cap charges three
# limits on every lease. Last it prints the storage thread's commits over
# the run: how many, requests per commit and the mean commit time (from
# braked's metrics), the measure of group commit in strict durability.
# docs/PERFORMANCE.md has its figures.
set -eu
B=$1; C=$2; DEPTH=$3; S=${4:-3}
shift $(($# < 4 ? $# : 4))
. "$(dirname "$0")/fresh_braked.sh"
FreshBraked "$B"
GenerousBucket "$B"
threads() {
  for t in /proc/$P/task/*; do
    echo "$(basename "$t") $(cut -d' ' -f10,14,15 "$t/stat")"
  done
}
SETTLE=(--commit --tokens 10)
[ "${COMMIT:-1}" = 0 ] && SETTLE=()
storage() {
  "$B/ctl/brakectl" --socket "$D/s.sock" metrics |
    grep -E '^brake_storage_(batches_total|commit_seconds_total) '
}
storage > "$D/storage_before"
threads > "$D/before"
"$B/bench/brake-bench" --socket "$D/s.sock" --connections "$C" \
  --depth "$DEPTH" --seconds "$S" --warmup-seconds 0.5 --user cmp \
  --task-prefix cmp- "${SETTLE[@]}" --json "$@" > "$D/run.json"
threads > "$D/after"
storage > "$D/storage_after"
kill -TERM "$P"
wait "$P"
python3 - "$D" <<'PY'
import json, os, sys
d = sys.argv[1]
run = json.load(open(d + "/run.json"))
# CPU counted over the whole run (warm-up and drain too), per acquire
# answered in it.
acquires = run["answers"]
tick_us = 1e6 / os.sysconf("SC_CLK_TCK")
commits = run.get("commits") or {"per_sec": 0, "errors": 0}
print("acquires/s %.0f  commits/s %.0f  acquire p50 %.1f us  errors %d"
      % (run["decisions_per_sec"], commits["per_sec"],
         run["latency_us"]["p50"], run["errors"] + commits["errors"]))
unit = "acquire + commit" if run.get("commits") else "acquire"
before = {l.split()[0]: l.split() for l in open(d + "/before")}
for n, line in enumerate(open(d + "/after")):
    tid, faults, user, system = line.split()
    if tid in before:
        f = (int(faults) - int(before[tid][1])) / acquires
        u = (int(user) - int(before[tid][2])) * tick_us / acquires
        s = (int(system) - int(before[tid][3])) * tick_us / acquires
        print("  thread %s%s: user %.2f us, system %.2f us, %.4f page faults"
              " per %s" % (tid, " (loop)" if n == 0 else "", u, s, f, unit))
def metrics(name):
    return {l.split()[0]: float(l.split()[1]) for l in open(d + "/" + name)}
m0, m1 = metrics("storage_before"), metrics("storage_after")
commits = m1["brake_storage_batches_total"] - m0["brake_storage_batches_total"]
seconds = (m1["brake_storage_commit_seconds_total"]
           - m0["brake_storage_commit_seconds_total"])
if commits > 0:
    print("  storage: %d commits, %.1f acquires per commit, %.3f ms per commit"
          % (commits, acquires / commits, seconds / commits * 1e3))
PY
