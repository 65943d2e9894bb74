#!/bin/bash
# bench/ab.sh ROUNDS "ARGS" BENCH... : runs each brake-decide-bench binary in
# turn with ARGS, ROUNDS times over, and prints, per binary and row
# (subjects/case/prefetch/stored, and /random for --order random), the
# minimum and the median ns per decision of the rounds, then every round.
# Alternating the binaries is what lets a before/after through on a VM whose
# speed drifts by tens of percent within minutes
# (docs/performance/09-ninth-pass.md).
set -euo pipefail
if [ $# -lt 3 ]; then
  echo "usage: bench/ab.sh ROUNDS \"ARGS\" BENCH..." >&2
  exit 2
fi
rounds=$1
args=$2
shift 2
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for _ in $(seq "$rounds"); do
  for bin in "$@"; do
    # shellcheck disable=SC2086  # ARGS is a list of flags
    "$bin" $args 2>&1 |
      awk -v b="$bin" '$1 ~ /^[0-9]+$/ && NF >= 10 {
        order = $NF == "random" ? "/random" : ""
        print b, $1 "/" $2 "/" $3 "/" $4 order, $6
      }' >>"$out"
  done
done
python3 - "$out" <<'PY'
import collections, sys
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    binary, row, ns = line.split()
    rows[(row, binary)].append(int(ns))
for (row, binary), ns in sorted(rows.items()):
    s = sorted(ns)
    print(f"{row:24} {binary:45} min {s[0]:5} med {s[len(s) // 2]:5}  {ns}")
PY
