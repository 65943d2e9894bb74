#!/bin/bash
# bench/syscall_split.sh BUILD [ROUNDS [SECONDS]]: where a 1x1 round trip's
# server time goes, braked against the echo server in its own process.
#
# Each round runs brake-bench at 1 connection x 1 in flight for SECONDS
# (default 3) against `brake-bench --echo-server`, then against a fresh
# braked from BUILD (compare's generous task:* bucket, leases left open),
# each with BUILD's libbrake-syscall-times.so preloaded
# (bench/syscall_times.cc), and prints per server the client's p50 and the
# server's p50 nanoseconds from epoll_wait's return to its read, in the
# read, and in the write of the reply. What is left of a round trip is the
# client's own and the server's user time between its read and its write.
# docs/performance/14-fourteenth-pass.md has figures.
set -eu
B=$1; ROUNDS=${2:-3}; S=${3:-3}
SHIM="$B/bench/libbrake-syscall-times.so"
[ -f "$SHIM" ] || { echo "no $SHIM: build the brake-syscall-times target" >&2; exit 2; }
T=$(mktemp -d /tmp/split.XXXX)
trap 'rm -rf "$T"' EXIT
POLICY='{"limits":[{"name":"rps","resource":"requests","algorithm":"token_bucket","rate":1000000000,"per_ms":1000,"burst":1000000000}]}'
echo '{"durability":"batched","max_open_leases":1000000000}' > "$T/c.json"

one() {  # one server kind: echo or braked; prints a row
  local kind=$1 dir="$T/$1.$2"
  mkdir -p "$dir"
  if [ "$kind" = echo ]; then
    LD_PRELOAD="$SHIM" "$B/bench/brake-bench" --echo-server "$dir/s" 2> "$dir/log" &
  else
    LD_PRELOAD="$SHIM" "$B/daemon/braked" --socket "$dir/s" --db "$dir/db" \
      --config "$T/c.json" 2> "$dir/log" &
  fi
  local pid=$!
  for _ in $(seq 100); do [ -S "$dir/s" ] && break; sleep 0.05; done
  if [ "$kind" = braked ]; then
    "$B/ctl/brakectl" --socket "$dir/s" policy set 'task:*' "$POLICY" > /dev/null
  fi
  "$B/bench/brake-bench" --socket "$dir/s" --connections 1 --depth 1 \
    --seconds "$S" --warmup-seconds 0.5 --user cmp --task-prefix cmp- --json \
    > "$dir/bench.json"
  kill -TERM "$pid"
  wait "$pid" || true
  python3 - "$kind" "$dir" <<'PY'
import json, re, sys
kind, d = sys.argv[1], sys.argv[2]
p50 = json.load(open(d + "/bench.json"))["latency_us"]["p50"]
got = {}
for line in open(d + "/log"):
    m = re.match(r"syscall-times (\S+) +n=\d+ p10=\d+ p50=(\d+)", line)
    if m:
        got[m.group(1)] = int(m.group(2))
rd = got.get("read", got.get("recv", 0))
wr = got.get("write", got.get("send", got.get("writev", 0)))
print("%-7s client p50 %5.1f us   epoll->read %5d ns   read %5d ns   write %5d ns"
      % (kind, p50, got.get("epoll->io", 0), rd, wr))
PY
}

for r in $(seq "$ROUNDS"); do
  one echo "$r"
  one braked "$r"
done
