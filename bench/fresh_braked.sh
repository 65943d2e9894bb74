# Sourced by bench scripts (commit_load.sh):
# FreshBraked BUILD starts braked from BUILD (batched durability, or
# DURABILITY's from the environment; max_open_leases 1e9) on a socket and
# database in a new temporary
# directory, removed on exit, and waits until it answers. Sets D (the
# directory; its socket is $D/s.sock) and P (braked's pid). EXTRA_CONFIG
# is added to the config object as it is (e.g. ',"flush_interval_ms":100'). GenerousBucket
# BUILD then sets compare's task:* token bucket, which never denies; with
# SCOPES (e.g. 'global user:* task:*') in the environment it sets one on each
# of those scopes instead, and LIMIT names it (default rps).
FreshBraked() {
  D=$(mktemp -d /tmp/braked.XXXX)
  trap 'rm -rf "$D"' EXIT
  echo '{"durability":"'"${DURABILITY:-batched}"'","max_open_leases":1000000000'"${EXTRA_CONFIG:-}"'}' > "$D/c.json"
  "$1/daemon/braked" --socket "$D/s.sock" --db "$D/b.db" \
    --config "$D/c.json" > "$D/log" 2>&1 &
  P=$!
  for _ in $(seq 100); do
    "$1/ctl/brakectl" --socket "$D/s.sock" ping > /dev/null 2>&1 && return
    sleep 0.05
  done
}

GenerousBucket() {
  local scope scopes
  read -ra scopes <<< "${SCOPES:-task:*}"  # split, never globbed
  for scope in "${scopes[@]}"; do
    "$1/ctl/brakectl" --socket "$D/s.sock" policy set "$scope" \
      '{"limits":[{"name":"'"${LIMIT:-rps}"'","resource":"requests","algorithm":"token_bucket","rate":1000000000,"per_ms":1000,"burst":1000000000}]}' \
      > /dev/null
  done
}
