#!/bin/sh
# Runs one libFuzzer target for a while and prints its totals.
#
#   tests/fuzz/run_fuzz.sh TARGET RUNS [JOBS [SECONDS]]
#
# TARGET is request, config, policy, http or stream; RUNS the executions wanted in total,
# split over JOBS parallel libFuzzer jobs (default 2); SECONDS caps each job's
# time (default 1500). Needs a BRAKE_FUZZ build (docs/FUZZING.md) in
# $BUILD (default build-fuzz). New inputs go to $WORK/TARGET/corpus and
# crash, leak and timeout inputs to $WORK/TARGET/artifacts (default
# $BUILD/fuzz-work); the committed seeds in tests/fuzz/corpus/TARGET are
# read, never written.
set -eu
target=$1
runs=$2
jobs=${3:-2}
seconds=${4:-1500}
src=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${BUILD:-build-fuzz}" && pwd)
work=${WORK:-$build/fuzz-work}/$target
case $target in
  request) max_len=1536 ;;  # max_line_bytes is 1024 in request_fuzz.cc
  config | policy | http | stream) max_len=2048 ;;
  *) echo "run_fuzz.sh: unknown target $target" >&2; exit 2 ;;
esac
# Shorter allocation stacks in ASan reports: about 10% more executions per
# second, and a report still names the allocating function.
ASAN_OPTIONS=${ASAN_OPTIONS:-malloc_context_size=5}
export ASAN_OPTIONS
mkdir -p "$work/corpus" "$work/artifacts"
cd "$work"
rm -f fuzz-*.log
per_job=$(( (runs + jobs - 1) / jobs ))
started=$(date +%s)
"$build/tests/${target}_fuzz" -jobs="$jobs" -workers="$jobs" \
  -runs="$per_job" -max_total_time="$seconds" \
  -dict="$src/request.dict" -max_len="$max_len" -timeout=10 \
  -rss_limit_mb=2048 -print_final_stats=1 \
  -artifact_prefix="$work/artifacts/" \
  corpus "$src/corpus/$target" >/dev/null 2>&1 || true
elapsed=$(( $(date +%s) - started ))
execs=$(grep -h '^stat::number_of_executed_units' fuzz-*.log |
        awk '{s += $2} END {print s + 0}')
cov=$(grep -h -E '(DONE|pulse|NEW|REDUCE) +cov:' fuzz-*.log |
      sed -E 's/.*cov: ([0-9]+) ft: ([0-9]+).*/\1 \2/' |
      sort -n | tail -1)
echo "target:      $target"
echo "jobs:        $jobs"
echo "wall time:   ${elapsed} s"
echo "executions:  $execs"
echo "exec/s:      $(( execs / (elapsed > 0 ? elapsed : 1) ))"
echo "cov, ft:     $cov (the best job's edges and features)"
echo "corpus:      $(ls corpus | wc -l) inputs"
echo "artifacts:   $(ls artifacts | wc -l) (crashes, leaks, timeouts)"
grep -h -E 'ERROR|FUZZ_CHECK|runtime error|SUMMARY' fuzz-*.log | head -20 || true
