#!/bin/bash
# bench/wal_frames.sh BUILD [SECONDS [ARGS...]]: the pages a commit writes,
# by table.
#
# Starts a fresh braked from BUILD (DURABILITY from the environment, default
# strict) with compare's generous task:* bucket, runs brake-bench 16x16 for
# SECONDS (default 2) with ARGS (default: --commit --tokens 10; e.g.
# '--commit --tokens 10 --users 16', or '--tokens 10' for acquires alone),
# then kills braked with SIGKILL so that its WAL stays as it was. It reads
# the WAL's frame headers (a page number and a commit mark each; the frames
# after the last checkpoint's reset, up to the first whose salt does not
# match) and names each page's table with SQLite's dbstat on a copy of the
# database and WAL. Prints the commits found, the frames per commit over the
# last 200 of them, and their split by table ("header" is page 1, "free"
# a page on the freelist when braked was killed). Needs python3 with
# sqlite3 (dbstat is in Debian's SQLite). docs/performance/
# 28-twenty-eighth-pass.md has figures.
set -eu
B=$1; S=${2:-2}
shift $(($# < 2 ? $# : 2))
ARGS=("$@")
[ ${#ARGS[@]} -eq 0 ] && ARGS=(--commit --tokens 10)
DURABILITY=${DURABILITY:-strict}
. "$(dirname "$0")/fresh_braked.sh"
FreshBraked "$B"
GenerousBucket "$B"
"$B/bench/brake-bench" --socket "$D/s.sock" --connections 16 --depth 16 \
  --seconds "$S" --warmup-seconds 0.5 --user cmp --task-prefix cmp- \
  "${ARGS[@]}" --json > "$D/run.json"
kill -KILL "$P"
wait "$P" 2> /dev/null || true
mkdir "$D/copy"
cp "$D/b.db" "$D/b.db-wal" "$D/copy/"
python3 - "$D/copy/b.db" <<'PY'
import collections, sqlite3, struct, sys
path = sys.argv[1]
wal = open(path + "-wal", "rb").read()
_, _, page_size, _, salt1, salt2, _, _ = struct.unpack(">8I", wal[:32])
commits, current, at = [], [], 32
while at + 24 + page_size <= len(wal):
    page, commit, s1, s2 = struct.unpack(">4I", wal[at:at + 16])
    if (s1, s2) != (salt1, salt2):
        break
    current.append(page)
    if commit:
        commits.append(current)
        current = []
    at += 24 + page_size
db = sqlite3.connect(path)
owner = {page: name for name, page in
         db.execute("SELECT name, pageno FROM dbstat")}
owner[1] = "header"
last = commits[-200:]
if not last:
    sys.exit("wal_frames: no commit in the WAL (a checkpoint just reset it?)")
split = collections.Counter(owner.get(p, "free") for c in last for p in c)
print(f"page size {page_size}, {len(commits)} commits in the WAL, "
      f"{sum(map(len, last)) / len(last):.2f} frames per commit "
      f"(last {len(last)})")
for name, n in split.most_common():
    print(f"  {n / len(last):6.2f}  {name}")
PY
