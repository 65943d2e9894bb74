#!/bin/bash
# bench/spread.sh BUILD K SECONDS MODE: braked with K tasks in use.
#
# Starts a fresh braked from BUILD (batched durability, max_open_leases 1e9)
# on a temporary socket and database, sets a task:* token bucket, has
# brake-bench (--spread) acquire for each of the K tasks once, then
# runs SECONDS measured (1 s warm-up) and prints decisions/s, p50 and braked's
# CPU per reply (/proc/PID/stat, both threads, over the measured run and its
# warm-up). MODE deny: one call per task per day, so the run is all denials
# over K subjects; MODE grant: a bucket that never denies, so every acquire
# grants (and dirties) a different subject. PERF=1 also records
# `perf record -e cpu-clock -g` of braked for 4 s into /tmp/spr.perf.
# CONNECTIONS and DEPTH set the measured run's shape (default 16 x 16; the
# warm-up that grants every task once keeps brake-bench's own).
# docs/performance/07-seventh-pass.md and 08-eighth-pass.md have figures.
set -eu
B=$1; K=$2; S=$3; MODE=$4
. "$(dirname "$0")/fresh_braked.sh"
FreshBraked "$B"
if [ "$MODE" = deny ]; then
  POL='{"limits":[{"name":"rps","resource":"requests","algorithm":"token_bucket","rate":1,"per_ms":86400000,"burst":1}]}'
else
  POL='{"limits":[{"name":"rps","resource":"requests","algorithm":"token_bucket","rate":1000000,"per_ms":1000,"burst":1000000}]}'
fi
"$B/ctl/brakectl" --socket "$D/s.sock" policy set 'task:*' "$POL" > /dev/null
# Every task granted once (about 100,000 grants a second or more).
"$B/bench/brake-bench" --socket "$D/s.sock" --spread --tasks "$K" \
  --seconds $((K / 100000 + 2)) --warmup-seconds 0 --json > "$D/warm.json"
if [ -n "${PERF:-}" ]; then
  (perf record -e cpu-clock -g -p "$P" -o /tmp/spr.perf -- sleep 4 \
     > /dev/null 2>&1 &)
fi
T0=$(awk '{print $14+$15}' "/proc/$P/stat")
"$B/bench/brake-bench" --socket "$D/s.sock" --spread --tasks "$K" \
  --seconds "$S" --warmup-seconds 1 --connections "${CONNECTIONS:-16}" \
  --depth "${DEPTH:-16}" --json > "$D/run.json"
T1=$(awk '{print $14+$15}' "/proc/$P/stat")
python3 - "$D" "$T0" "$T1" << 'PY'
import json, os, sys
d, t0, t1 = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
r = json.load(open(os.path.join(d, "run.json")))
w = json.load(open(os.path.join(d, "warm.json")))
tick = os.sysconf("SC_CLK_TCK")
print("warm grants", w["grants"], "run: dec/s", r["decisions_per_sec"],
      "grants", r["grants"], "denials", r["denials"],
      "p50", r["latency_us"]["p50"],
      "cpu us/dec", round((t1 - t0) * 1e6 / tick / r["answers"], 3))
PY
"$B/ctl/brakectl" --socket "$D/s.sock" metrics 2> /dev/null |
  grep -E "^brake_(subjects|prefetched)" || true
kill "$P"
wait "$P" 2> /dev/null || true
