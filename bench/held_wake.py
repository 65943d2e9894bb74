#!/usr/bin/env python3
"""How soon a waiter for held room is answered once the room comes back.

Against a real braked, each round: a lease holds 900 of a 1,000-token quota;
a second connection's acquire of 200 waits (wait_ms 5000, parked: the
status shows it waiting); the lease is committed at 100 tokens, and the
time from the commit's answer to the waiter's grant is recorded, beside the
round trip of an acquire granted at once. For each durability (strict, an
fsync per commit; batched).

Usage: bench/held_wake.py --build build [--rounds 50] [--json]
"""
import argparse
import json
import os
import subprocess
import tempfile
import time

from restart_time import Conn  # one JSON line each way, on braked's socket


def start(build, durability, d):
    sock = os.path.join(d, "braked.sock")
    config = os.path.join(d, "config.json")
    with open(config, "w") as f:
        json.dump({"durability": durability}, f)
    proc = subprocess.Popen(
        [os.path.join(build, "daemon", "braked"), "--socket", sock,
         "--db", os.path.join(d, "brake.db"), "--config", config],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while True:
        try:
            return proc, Conn(sock), sock
        except OSError:
            if time.monotonic() > deadline:
                proc.kill()
                raise
            time.sleep(0.01)


def percentile(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))]


def measure(build, durability, rounds):
    with tempfile.TemporaryDirectory() as d:
        proc, c, sock = start(build, durability, d)
        try:
            w = Conn(sock)
            wake, direct = [], []
            for i in range(rounds):
                user = "u%d" % i
                assert c.call({"op": "policy.set", "scope": "user:" + user,
                               "limits": [{"name": "q", "resource": "tokens",
                                           "algorithm": "quota",
                                           "limit": 1000,
                                           "period": "total"}]})["ok"]
                t0 = time.monotonic()
                lease = c.call({"op": "acquire", "user": user, "task": user,
                                "tokens": 900})
                direct.append(time.monotonic() - t0)
                w.send_lines([{"op": "acquire", "user": user, "task": user,
                               "tokens": 200, "wait_ms": 5000}])
                while c.call({"op": "status", "user": user})["waiters"] < 1:
                    time.sleep(0.001)
                done = c.call({"op": "commit", "lease": lease["lease"],
                               "tokens": 100})
                t1 = time.monotonic()
                granted = w.read()
                wake.append(time.monotonic() - t1)
                assert done["ok"] and granted.get("granted"), granted
        finally:
            proc.terminate()
            proc.wait(10)
    ms = lambda xs, p: round(percentile(xs, p) * 1000, 3)
    return {"durability": durability, "rounds": rounds,
            "wake_after_commit_ms": {"p50": ms(wake, 0.5), "p99": ms(wake, 0.99),
                                     "max": round(max(wake) * 1000, 3)},
            "acquire_round_trip_ms": {"p50": ms(direct, 0.5),
                                      "p99": ms(direct, 0.99)}}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--rounds", type=int, default=50)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    results = [measure(args.build, d, args.rounds) for d in ("strict", "batched")]
    if args.json:
        print(json.dumps(results, indent=1))
        return
    for r in results:
        wk, rt = r["wake_after_commit_ms"], r["acquire_round_trip_ms"]
        print("%-8s waiter answered after the commit's answer: p50 %.3f ms, "
              "p99 %.3f, max %.3f; an acquire's round trip: p50 %.3f ms"
              % (r["durability"], wk["p50"], wk["p99"], wk["max"], rt["p50"]))


if __name__ == "__main__":
    main()
