#!/usr/bin/env python3
"""Writes the seed corpus of the fuzz targets into DIR/{request,config,policy}.

    tests/fuzz/gen_seed_corpus.py tests/fuzz/corpus

The generated files are committed; run this again after changing the seeds
(reproducers of findings, like corpus/policy/f1-lease-float-count, are added
by hand and kept). The request seeds start with request_fuzz.cc's peer-mask
byte and use its directives (+N ms, ~ reconnect, ! storage state).
"""
import json
import os
import sys

root = sys.argv[1]
def w(target, name, data):
    d = os.path.join(root, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), 'wb') as f:
        f.write(data)

def lines(*reqs):
    out = []
    for r in reqs:
        out.append(r if isinstance(r, str) else json.dumps(r, separators=(',', ':')))
    return '\n'.join(out) + '\n'

ADMIN = b'\xff'
EVEN_ADMIN = b'\x55'  # even lines admin, odd lines uid 1001
USERS = b'\x00'       # even lines uid 1000 (alice, bob), odd lines uid 1001

def req(target, name, mask, *reqs):
    w(target, name, mask + lines(*reqs).encode())

R = 'request'
req(R, 'ping', ADMIN, {"op": "ping"}, {"id": 1, "op": "ping"}, {"id": "a", "op": "ping"})
req(R, 'acquire_commit', ADMIN,
    {"id": 7, "op": "acquire", "user": "alice", "task": "t-42", "tokens": 1200,
     "requests": 1, "model": "gpt-4o", "resource": "openai", "fingerprint": "9f2c", "wait_ms": 0},
    {"id": 8, "op": "commit", "lease": "L1", "tokens": 1350, "input_tokens": 1000,
     "output_tokens": 350, "latency_ms": 812, "outcome": "ok"},
    {"id": 9, "op": "commit", "lease": "L1"},
    {"id": 10, "op": "status", "user": "alice"},
    {"id": 11, "op": "status", "task": "t-42"},
    {"id": 12, "op": "status", "resource": "openai"})
req(R, 'acquire_cancel', USERS,
    {"op": "acquire", "user": "alice", "task": "t1", "tokens": 10},
    {"op": "acquire", "user": "alice", "task": "t2"},
    {"op": "cancel", "lease": "L1"},
    {"op": "cancel", "lease": "L1"},
    {"op": "commit", "lease": "L1"},
    {"op": "cancel", "lease": "nope"})
req(R, 'task_tree', ADMIN,
    {"op": "acquire", "user": "bob", "task": "root", "tokens": 100},
    {"op": "acquire", "user": "bob", "task": "child", "parent": "root", "tokens": 100},
    {"op": "acquire", "user": "bob", "task": "grandchild", "parent": "child"},
    {"op": "acquire", "user": "alice", "task": "child"},
    {"op": "acquire", "user": "alice", "task": "x", "parent": "root"},
    {"op": "acquire", "user": "bob", "task": "y", "parent": "nope"},
    {"op": "acquire", "user": "bob", "task": "z", "parent": "z"},
    {"op": "acquire", "user": "bob", "task": "child", "parent": "grandchild"},
    {"op": "status", "task": "grandchild"})
limits = [
    {"name": "rps", "resource": "requests", "algorithm": "token_bucket", "rate": 100, "per_ms": 1000, "burst": 100},
    {"name": "ramp", "resource": "requests", "algorithm": "warmup", "rate": 50, "per_ms": 1000, "warmup_ms": 10000, "cold_factor": 3},
    {"name": "tpm", "resource": "tokens", "algorithm": "sliding_log", "limit": 100000, "window_ms": 60000},
    {"name": "rpm", "resource": "requests", "algorithm": "fixed_window", "limit": 100, "window_ms": 60000},
    {"name": "shape", "resource": "requests", "algorithm": "leaky_bucket", "rate": 50, "per_ms": 1000, "queue": 100},
    {"name": "daily", "resource": "usd", "algorithm": "quota", "limit": 5.0, "period": "day"},
    {"name": "inflight", "resource": "requests", "algorithm": "concurrency", "limit": 8},
]
breaker = {"loop": {"repeats": 5, "window_ms": 60000},
           "slow": {"max_rt_ms": 2000, "ratio": 0.5, "min_calls": 10, "window_ms": 10000},
           "errors": {"ratio": 0.5, "min_calls": 10, "window_ms": 10000},
           "spend_velocity": {"tokens": 200000, "window_ms": 60000},
           "open_ms": 30000, "open_backoff": 2.0, "max_open_ms": 600000, "half_open_probes": 3}
req(R, 'policy_ops', ADMIN,
    {"id": 1, "op": "policy.set", "scope": "user:alice", "limits": limits[:4]},
    {"id": 11, "op": "policy.set", "scope": "user:bob", "limits": limits[4:], "breaker": breaker},
    {"id": 2, "op": "policy.get", "scope": "user:alice"},
    {"id": 3, "op": "policy.list"},
    {"id": 4, "op": "policy.delete", "scope": "user:alice"},
    {"id": 5, "op": "policy.delete", "scope": "user:alice"},
    {"id": 6, "op": "policy.get", "scope": "task:*"},
    {"id": 7, "op": "policy.set", "scope": "global", "breaker": {"open_ms": 1000}},
    {"id": 8, "op": "policy.set", "scope": "resource:openai", "limits": []},
    {"id": 9, "op": "policy.set", "scope": "user:bob"},
    {"id": 10, "op": "policy.set", "scope": "user:bob", "limts": []})
for i, l in enumerate(limits):
    req(R, 'policy_%s' % l["algorithm"], ADMIN,
        {"op": "policy.set", "scope": "task:*", "limits": [dict(l, shadow=(i % 2 == 0))]},
        {"op": "acquire", "user": "alice", "task": "t", "tokens": 50},
        {"op": "acquire", "user": "alice", "task": "t", "tokens": 50},
        "+1000",
        {"op": "acquire", "user": "alice", "task": "t", "tokens": 50},
        {"op": "commit", "lease": "L1", "tokens": 10},
        {"op": "status", "task": "t"})
req(R, 'policy_bad', ADMIN,
    {"op": "policy.set", "scope": "user:a", "limits": [{"name": "x", "resource": "usd", "algorithm": "token_bucket", "rate": 1}]},
    {"op": "policy.set", "scope": "user:a", "limits": [{"name": "x", "resource": "tokens", "algorithm": "concurrency", "limit": 1}]},
    {"op": "policy.set", "scope": "user:a", "limits": [{"name": "x", "resource": "requests", "algorithm": "token_bucket", "rate": 1, "burts": 5}]},
    {"op": "policy.set", "scope": "user:a", "limits": [{"name": "x", "resource": "requests", "algorithm": "quota", "limit": 1, "period": "year"}]},
    {"op": "policy.set", "scope": "user:a", "limits": [limits[0], limits[0]]},
    {"op": "policy.set", "scope": "user:a", "limits": [{"name": "x", "resource": "requests", "algorithm": "sliding_log", "limit": 1.5, "window_ms": 1}]},
    {"op": "policy.set", "scope": "user:a", "limits": "none"},
    {"op": "policy.set", "scope": "user:a", "breaker": {"loop": {"repeats": 1, "window_ms": 1}}},
    {"op": "policy.set", "scope": "user:a", "breaker": {"slow": {"ratio": 2}}},
    {"op": "policy.set", "scope": "nobody:a", "limits": []},
    {"op": "policy.set", "scope": "user:", "limits": []},
    {"op": "policy.set", "scope": "user:*", "limits": []},
    {"op": "policy.set", "scope": "global", "limits": [], "breaker": None})
req(R, 'admin_forbidden', USERS,
    {"op": "policy.set", "scope": "user:alice", "limits": []},
    {"op": "policy.get", "scope": "user:alice"},
    {"op": "policy.list"},
    {"op": "policy.delete", "scope": "global"},
    {"op": "reset", "scope": "user:*"},
    {"op": "prices.set", "model": "m", "input_usd_per_mtok": 1, "output_usd_per_mtok": 1},
    {"op": "breaker.trip", "scope": "global"},
    {"op": "breaker.reset", "scope": "global"},
    {"op": "breaker.list"},
    {"id": 5, "op": "policy.list"})
req(R, 'uid_users', EVEN_ADMIN,
    {"op": "acquire", "user": "alice", "task": "a1"},
    {"op": "acquire", "user": "alice", "task": "a2"},
    {"op": "acquire", "user": "mallory", "task": "m1"},
    {"op": "commit", "lease": "L1"},
    {"op": "acquire", "user": "bob", "task": "b1"},
    {"op": "cancel", "lease": "L2"},
    {"op": "status", "user": "alice"},
    {"op": "status", "user": "alice"},
    {"op": "status", "task": "a1"},
    {"op": "status", "task": "a1"},
    {"op": "usage", "user": "alice"},
    {"op": "usage", "user": "alice"})
req(R, 'uid_users_mapped', USERS,
    {"op": "acquire", "user": "alice", "task": "a1"},
    {"op": "commit", "lease": "L1"},
    {"op": "acquire", "user": "carol", "task": "c1"},
    {"op": "status", "user": "carol"},
    {"op": "acquire", "user": "bob", "task": "b1", "tokens": 5},
    {"op": "cancel", "lease": "L2"},
    {"op": "usage", "user": "bob", "by": "day"},
    {"op": "status", "task": "b1"})
req(R, 'top', USERS,
    {"op": "acquire", "user": "alice", "task": "a1", "resource": "r"},
    {"op": "acquire", "user": "carol", "task": "c1"},
    {"op": "top", "by": "user"},
    {"op": "top", "by": "task", "limit": 1},
    {"op": "top", "by": "resource"},
    {"op": "top", "by": "resource", "limit": 1000},
    {"op": "top", "by": "model"},
    {"op": "top", "by": "user", "limit": 0},
    {"op": "metrics"})
req(R, 'admin_misc', ADMIN,
    {"op": "reset", "scope": "user:alice"},
    {"op": "reset", "scope": "user:*"},
    {"op": "reset", "scope": "global"},
    {"op": "prices.set", "model": "m1", "input_usd_per_mtok": 2.5, "output_usd_per_mtok": 10},
    {"op": "prices.set", "model": "m1", "input_usd_per_mtok": -1, "output_usd_per_mtok": 10},
    {"op": "prices.set", "model": "m1", "input_usd_per_mtok": 1e7, "output_usd_per_mtok": 0},
    {"op": "acquire", "user": "u", "task": "t", "model": "m1", "tokens": 1000000},
    {"op": "acquire", "user": "u", "task": "t", "model": "unpriced"},
    {"op": "commit", "lease": "L1", "input_tokens": 5, "output_tokens": 6, "tokens": 10},
    {"op": "commit", "lease": "L1", "input_tokens": 5, "output_tokens": 6},
    {"op": "metrics"})
req(R, 'breakers', ADMIN,
    {"op": "breaker.trip", "scope": "task:t", "open_ms": 60000},
    {"op": "breaker.list"},
    {"op": "acquire", "user": "u", "task": "t"},
    {"op": "breaker.reset", "scope": "task:t"},
    {"op": "acquire", "user": "u", "task": "t"},
    {"op": "breaker.trip", "scope": "user:*"},
    {"op": "breaker.trip", "scope": "resource:api", "open_ms": 0},
    {"op": "breaker.reset", "scope": "resource:nothing"},
    "+3000",
    {"op": "acquire", "user": "u", "task": "t2", "resource": "api"},
    {"op": "acquire", "user": "carol", "task": "t5"},
    {"op": "acquire", "user": "carol", "task": "t5", "tokens": 5000},
    {"op": "acquire", "user": "carol", "task": "t5", "tokens": 5000},
    {"op": "breaker.list"})
req(R, 'slow_resource', ADMIN,
    *([{"op": "acquire", "user": "u", "task": "s%d" % i, "resource": "slow"} for i in range(3)] +
      [{"op": "commit", "lease": "L%d" % i, "outcome": "error", "latency_ms": 10} for i in range(1, 4)] +
      [{"op": "acquire", "user": "u", "task": "s9", "resource": "slow"}, "+501",
       {"op": "acquire", "user": "u", "task": "s9", "resource": "slow"},
       {"op": "acquire", "user": "u", "task": "s8", "resource": "slow"},
       {"op": "commit", "lease": "L4", "outcome": "error"},
       {"op": "cancel", "lease": "L5"},
       "+1501", {"op": "acquire", "user": "u", "task": "s9", "resource": "slow"},
       {"op": "commit", "lease": "L6", "outcome": "ok", "latency_ms": 1},
       {"op": "breaker.list"}, {"op": "status", "resource": "slow"}]))
req(R, 'loop_breaker', ADMIN,
    {"op": "acquire", "user": "u", "task": "t", "fingerprint": "same"},
    {"op": "commit", "lease": "L1"},
    {"op": "acquire", "user": "u", "task": "t", "fingerprint": "same"},
    {"op": "commit", "lease": "L2"},
    {"op": "acquire", "user": "u", "task": "t", "fingerprint": "same"},
    {"op": "commit", "lease": "L3"},
    {"op": "acquire", "user": "u", "task": "t", "fingerprint": "same"},
    "+1001",
    {"op": "acquire", "user": "u", "task": "t", "fingerprint": "other"},
    {"op": "acquire", "user": "u", "task": "t", "fingerprint": "other2"},
    {"op": "commit", "lease": "L4", "outcome": "ok", "latency_ms": 5},
    {"op": "status", "task": "t"})
req(R, 'error_breaker', ADMIN,
    *([{"op": "acquire", "user": "u", "task": "t%d" % i, "resource": "api"} for i in range(5)] +
      [{"op": "commit", "lease": "L%d" % i, "outcome": "error", "latency_ms": 3000} for i in range(1, 6)] +
      [{"op": "acquire", "user": "u", "task": "t9", "resource": "api"}, "+2500",
       {"op": "acquire", "user": "u", "task": "t9", "resource": "api"},
       {"op": "commit", "lease": "L6", "outcome": "timeout", "latency_ms": 10},
       {"op": "acquire", "user": "u", "task": "t9", "resource": "api"},
       {"op": "commit", "lease": "L7", "outcome": "throttled", "retry_after_ms": 5000},
       {"op": "acquire", "user": "u", "task": "t9", "resource": "api"},
       {"op": "status", "resource": "api"}]))
req(R, 'concurrency_expiry', ADMIN,
    *([{"op": "acquire", "user": "u", "task": "t"} for i in range(6)] +
      ["+60001", {"op": "acquire", "user": "u", "task": "t"}, {"op": "commit", "lease": "L1"},
       "+60001", {"op": "commit", "lease": "L1"}, {"op": "status", "user": "u"}]))
req(R, 'probes_disconnect', ADMIN,
    {"op": "breaker.trip", "scope": "task:t", "open_ms": 1000},
    "+1001",
    {"op": "acquire", "user": "u", "task": "t"},
    {"op": "acquire", "user": "u", "task": "t"},
    {"op": "acquire", "user": "u", "task": "t"},
    "~",
    {"op": "acquire", "user": "u", "task": "t"},
    {"op": "cancel", "lease": "L2"},
    {"op": "commit", "lease": "L1", "outcome": "error"},
    {"op": "breaker.list"})
req(R, 'storage_failing', ADMIN,
    {"op": "acquire", "user": "u", "task": "t"},
    "!",
    {"op": "acquire", "user": "u", "task": "t"},
    {"op": "commit", "lease": "L1"},
    "!",
    {"op": "acquire", "user": "u", "task": "t"},
    {"op": "metrics"},
    "!",
    {"op": "acquire", "user": "u", "task": "t"})
req(R, 'usage', USERS,
    {"id": 1, "op": "usage", "user": "alice"},
    {"id": 2, "op": "usage", "user": "alice", "by": "model"},
    {"id": 3, "op": "usage", "user": "bob", "by": "day", "since_ms": 0},
    {"id": 4, "op": "usage", "user": "bob", "by": "total", "task": "t"},
    {"id": 5, "op": "usage", "user": "bob", "by": None},
    {"id": 6, "op": "usage", "user": "bob", "by": "week"},
    {"id": 7, "op": "usage", "user": "alice", "since_ms": -1},
    {"id": 8, "op": "usage"})
req(R, 'quota_periods', ADMIN,
    *([{"op": "policy.set", "scope": "user:*", "limits": [
        {"name": "q" + p, "resource": "tokens", "algorithm": "quota", "limit": 1000, "period": p}
        for p in ["hour", "day", "week", "month", "total"]]}] +
      [{"op": "acquire", "user": "u", "task": "t", "tokens": 600},
       {"op": "acquire", "user": "u", "task": "t", "tokens": 600},
       "+3600000", {"op": "acquire", "user": "u", "task": "t", "tokens": 600},
       "+2678400000", {"op": "acquire", "user": "u", "task": "t", "tokens": 300},
       {"op": "status", "user": "u"}]))
req(R, 'usd_cap', ADMIN,
    {"op": "policy.set", "scope": "user:u", "limits": [
        {"name": "cap", "resource": "usd", "algorithm": "quota", "limit": 0.01, "period": "total"},
        {"name": "win", "resource": "usd", "algorithm": "sliding_log", "limit": 0.005, "window_ms": 1000},
        {"name": "fw", "resource": "usd", "algorithm": "fixed_window", "limit": 0.02, "window_ms": 1000}]},
    {"op": "acquire", "user": "u", "task": "t", "model": "gpt-4o", "tokens": 400},
    {"op": "acquire", "user": "u", "task": "t", "model": "gpt-4o", "tokens": 400},
    {"op": "commit", "lease": "L1", "input_tokens": 100000, "output_tokens": 100000},
    {"op": "acquire", "user": "u", "task": "t", "model": "mini", "tokens": 1},
    {"op": "status", "user": "u"})
req(R, 'token_bucket_too_large', ADMIN,
    {"op": "acquire", "user": "carol", "task": "t", "tokens": 5000},
    {"op": "acquire", "user": "carol", "task": "t", "tokens": 5000},
    {"op": "acquire", "user": "u", "task": "t2", "requests": 1000000},
    {"op": "acquire", "user": "u", "task": "t3", "requests": 0, "tokens": 1000000000000},
    {"op": "acquire", "user": "u", "task": "t4", "wait_ms": 100})
# framing and decoding edge cases
w(R, 'framing', ADMIN + b'\n\r\n{"op":"ping"}\r\n  \n{"op":"ping"}\n\n{"op":"ping"}')
w(R, 'line_too_long', ADMIN + b'{"op":"ping"}\n{"op":"ping","pad":"' + b"x" * 1100 + b'"}\n{"op":"ping"}\n')
w(R, 'partial_too_long', ADMIN + b'{"op":"ping"}\n' + b"y" * 1100)
w(R, 'deep_nesting', ADMIN + b'[' * 33 + b']' * 33 + b'\n' + b'{"a":' * 32 + b'1' + b'}' * 32 + b'\n'
  + b'{"op":"ping","x":' + b'[' * 31 + b']' * 31 + b'}\n' + b'{"id":3,"op":"ping","x":' + b'[' * 32 + b']' * 32 + b'}\n'
  + b'{"op":"ping","s":"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\\"[[["}\n')
w(R, 'bad_json', ADMIN + b'\n'.join([b'{', b'not json', b'{"op":"ping",}', b'{"op":"ping"} x', b'\xff\xfe',
                                     b'{"op":"\xc3"}', b'{"op":"ping","u":"\\ud800"}', b'"ping"', b'[1,2]', b'null',
                                     b'42', b'{"op":"ping"}{"op":"ping"}', b'{"op":"p\\u0069ng"}']) + b'\n')
req(R, 'envelope', ADMIN,
    {"id": None, "op": "ping"}, {"id": 1.5, "op": "ping"}, {"id": [1], "op": "ping"},
    {"id": -9223372036854775808, "op": "ping"}, {"id": 18446744073709551615, "op": "ping"},
    {"id": "x" * 300, "op": "ping"}, {"id": True, "op": "ping"}, {"id": 3},
    {"id": 4, "op": 5}, {"id": 5, "op": "nope"}, {"id": 6, "op": "PING"}, {"op": "ping", "extra": {"a": [1]}},
    '{"op":"ping","op":"metrics"}', '{"id":1,"id":2,"op":"ping"}')
req(R, 'fields', ADMIN,
    {"op": "acquire", "user": "alice"},
    {"op": "acquire", "task": "t"},
    {"op": "acquire", "user": "", "task": "t"},
    {"op": "acquire", "user": "*", "task": "t"},
    {"op": "acquire", "user": "a" * 129, "task": "t"},
    {"op": "acquire", "user": "a" * 128, "task": "t"},
    {"op": "acquire", "user": "tab\there", "task": "t"},
    {"op": "acquire", "user": "del\u007f", "task": "t"},
    {"op": "acquire", "user": "c1\u0085", "task": "t"},
    {"op": "acquire", "user": "\u00e9l\u00e8ve", "task": "t\u4e2d"},
    {"op": "acquire", "user": 5, "task": "t"},
    {"op": "acquire", "user": "u", "task": "t", "tokens": -1},
    {"op": "acquire", "user": "u", "task": "t", "tokens": 1.5},
    {"op": "acquire", "user": "u", "task": "t", "tokens": 1e12},
    {"op": "acquire", "user": "u", "task": "t", "tokens": 1000000000001},
    {"op": "acquire", "user": "u", "task": "t", "tokens": "5"},
    {"op": "acquire", "user": "u", "task": "t", "requests": 1000001},
    {"op": "acquire", "user": "u", "task": "t", "wait_ms": 3600001},
    {"op": "acquire", "user": "u", "task": "t", "tokens": None, "model": None},
    {"op": "commit", "lease": ""},
    {"op": "commit", "lease": "L" * 257},
    {"op": "commit", "lease": "L1", "outcome": "maybe"},
    {"op": "commit", "lease": "L1", "latency_ms": 86400001},
    {"op": "status"},
    {"op": "status", "user": "a", "task": "b"},
    {"op": "breaker.trip", "scope": "global", "open_ms": 0},
    {"op": "breaker.trip", "scope": "global", "open_ms": 2592000001})
w(R, 'empty', b'')
w(R, 'mask_only', b'\x01')

C = 'config'
w(C, 'protocol_example', json.dumps({
    "policies": {"user:*": {"limits": limits, "breaker": breaker}},
    "prices": {"gpt-4o": {"input_usd_per_mtok": 2.5, "output_usd_per_mtok": 10}},
    "admin_uids": [0], "socket_mode": "0660", "durability": "strict", "lease_ttl_ms": 600000,
    "max_line_bytes": 65536, "metrics_listen": "127.0.0.1:9464"}, indent=1))
w(C, 'all_settings', json.dumps({
    "admin_uids": [0, 1000, 4294967294], "socket_mode": "0600", "durability": "batched",
    "flush_interval_ms": 10000, "lease_ttl_ms": 1000, "max_line_bytes": 1024, "max_connections": 1,
    "max_waiters_per_scope": 1000000, "partial_line_timeout_ms": 100,
    "uid_users": {"1000": ["alice", "bob"], "0": []}, "max_output_bytes": 65536,
    "on_storage_error": "open", "metrics_listen": ""}))
w(C, 'comments', '// braked config\n{\n  /* the admin */ "admin_uids": [0],\n  "policies": {}, "prices": {}\n}\n')
w(C, 'empty_object', '{}')
w(C, 'bad', '{"lease_ttl_ms": 999, "socket_mode": "0999"}')
w(C, 'unknown', '{"lease_ttl": 1000}')
w(C, 'bad_types', '{"admin_uids": [-1], "durability": "fast", "socket_mode": 438}')
w(C, 'policies_bad', json.dumps({"policies": {"user:*": {"limits": [{"name": "x"}]}, "nobody": {}}}))
w(C, 'prices_bad', json.dumps({"prices": {"m": {"input_usd_per_mtok": 1e7}, "": {}}}))
w(C, 'uid_users_bad', json.dumps({"uid_users": {"x": ["a"], "-1": [], "1": "a", "2": [1]}}))
w(C, 'not_object', '[1, 2, 3]')
w(C, 'deep', '{"policies":' + '[' * 200 + ']' * 200 + '}')

P = 'policy'
w(P, 'all_algorithms', json.dumps({"limits": limits, "breaker": breaker}))
for l in limits:
    w(P, 'limit_' + l["algorithm"], json.dumps(l))
w(P, 'limits_array', json.dumps(limits))
w(P, 'breaker_only', json.dumps({"breaker": {"loop": {"repeats": 2, "window_ms": 1}, "open_ms": 1}}))
w(P, 'canonical_defaults', '{"limits":[{"name":"a","resource":"tokens","algorithm":"token_bucket","rate":7,"pay_later":true},'
  '{"name":"b","resource":"requests","algorithm":"warmup","rate":3,"warmup_ms":1,"cold_factor":1.5,"shadow":true},'
  '{"name":"c","resource":"usd","algorithm":"sliding_log","limit":0.000000001,"window_ms":1},'
  '{"name":"d","resource":"usd","algorithm":"fixed_window","limit":1e9,"window_ms":10000000000}]}')
w(P, 'bad_unknown_key', '{"limits":[],"limts":[]}')
w(P, 'bad_duplicate', json.dumps({"limits": [limits[0], limits[0]]}))
w(P, 'null_fields', '{"limits":null,"breaker":null}')
w(P, 'lease', '{"id":"L1","user":"alice","task":"t-42","parent":"","resource":"openai","model":"gpt-4o",'
  '"fingerprint":"9f2c","requests":1,"tokens":1200,"usd_nano":12000,"granted_at_us":1709287200000000,'
  '"expires_at_us":1709287800000000,"scopes":["global","user:alice","task:t-42","resource:openai"],'
  '"charges":[["global","rps","requests",1],["user:alice","daily","usd",12000],["task:t-42","tpm","tokens",1200]]}')
w(P, 'lease_escapes', '{"id":"L\\u0001\\"\\\\","user":"\\u00e9","task":"t","parent":"p","resource":"","model":"",'
  '"fingerprint":"","requests":0,"tokens":0,"usd_nano":-5,"granted_at_us":0,"expires_at_us":9223372036854775807,'
  '"scopes":[],"charges":[]}')
w(P, 'lease_bad', '{"id":"L1","user":"alice","task":"t","parent":"","resource":"","model":"","fingerprint":"",'
  '"requests":1,"tokens":1,"usd_nano":0,"granted_at_us":0,"expires_at_us":1,"scopes":["global"],'
  '"charges":[["global","rps","bananas",1]]}')
# The compact forms (formats 2 and 3, daemon/lease_codec.h): the id is the
# row's; format 3 names a lease's own scopes by codes its fields spell.
w(P, 'lease_format2', '[2,"alice","t-42","t-7","openai","gpt-4o","9f2c",1,1200,12000000,'
  '1700000000000000,1700000600000000,["global","user:alice","task:t-42","task:t-7","resource:openai"],'
  '[[1,"daily",2,12000000],[2,"inflight",0,1],[4,"tpm",1,1200]]]')
w(P, 'lease_format3', '[3,"alice","t-42","t-7","openai","gpt-4o","9f2c",1,1200,12000000,'
  '1700000000000000,1700000600000000,[0,1,2,3,4,"user:bob"],'
  '[[1,"daily",2,12000000],[5,"inflight",0,1],["task:x","tpm",1,1200]]]')
w(P, 'lease_format3_bad_code', '[3,"alice","t-42","","","","",1,0,0,0,1,[0,1,2,3],[]]')
w(P, 'not_json', 'limits')
