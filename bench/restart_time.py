#!/usr/bin/env python3
"""Restart time and memory of braked with many stored subjects.

Builds a database holding N users (each with a token-bucket state and spend)
and N tasks, then measures, against a real braked:
  - startup: spawn until the first ping is answered (subjects load lazily);
  - the first acquire of a stored subject (loaded on demand) and the next;
  - memory: RSS after startup, after K users and their K tasks were loaded
    (by `status`), and after they were evicted again (subject_idle_ms).

Usage: bench/restart_time.py --build build [--subjects 1000000] [--touch 100000]
Prints a report; --json prints it as JSON.
"""
import argparse
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time

POLICY = {"limits": [{"name": "rps", "resource": "requests",
                      "algorithm": "token_bucket", "rate": 10,
                      "per_ms": 1000, "burst": 10}]}


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


class Conn:
    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.connect(path)
        self.buf = b""

    def send_lines(self, objs):
        self.s.sendall(b"".join(json.dumps(o).encode() + b"\n" for o in objs))

    def read(self):
        while b"\n" not in self.buf:
            chunk = self.s.recv(1 << 16)
            if not chunk:
                raise RuntimeError("daemon closed the connection")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def call(self, obj):
        self.send_lines([obj])
        return self.read()


def start(braked, sock, db, config):
    t0 = time.monotonic()
    p = subprocess.Popen([braked, "--socket", sock, "--db", db, "--config",
                          config], stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE)
    while True:
        try:
            c = Conn(sock)
            if c.call({"op": "ping"}).get("ok"):
                return p, c, time.monotonic() - t0
        except (FileNotFoundError, ConnectionRefusedError):
            pass
        if p.poll() is not None:
            raise RuntimeError("braked exited: " + p.stderr.read().decode())
        time.sleep(0.001)


def metric(c, name):
    text = c.call({"op": "metrics"})["text"]
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return None


def populate(db, n):
    now_us = int(time.time() * 1e6)
    con = sqlite3.connect(db)
    con.execute("BEGIN")
    con.executemany(
        "INSERT INTO limiters(scope, name, algorithm, state) VALUES(?,?,?,?)",
        ((f"user:u{i}", "rps", "token_bucket", str(now_us - 10_000_000))
         for i in range(n)))
    con.executemany(
        "INSERT INTO spend(scope, requests, tokens, usd_nano) VALUES(?,?,?,?)",
        ((f"user:u{i}", 3, 300, 0) for i in range(n)))
    con.executemany(
        "INSERT INTO tasks(task, user, parent, created_ms) VALUES(?,?,?,?)",
        ((f"t{i}", f"u{i}", "", now_us // 1000) for i in range(n)))
    con.execute("COMMIT")
    con.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--subjects", type=int, default=1_000_000)
    ap.add_argument("--touch", type=int, default=100_000)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    braked = os.path.join(a.build, "daemon", "braked")
    out = {"subjects": a.subjects, "touched": a.touch}
    with tempfile.TemporaryDirectory() as tmp:
        sock, db = os.path.join(tmp, "s.sock"), os.path.join(tmp, "brake.db")
        config = os.path.join(tmp, "braked.json")
        with open(config, "w") as f:
            json.dump({"subject_idle_ms": 600_000,
                       "policies": {"user:*": POLICY}}, f)
        p, c, _ = start(braked, sock, db, config)  # creates the schema
        p.terminate()
        p.wait()
        t0 = time.monotonic()
        populate(db, a.subjects)
        out["populate_s"] = round(time.monotonic() - t0, 2)
        out["db_mib"] = round(os.path.getsize(db) / 2**20, 1)

        p, c, startup = start(braked, sock, db, config)
        out["startup_s"] = round(startup, 3)
        out["rss_after_start_kib"] = rss_kib(p.pid)
        out["in_memory_after_start"] = metric(c, "brake_subjects")

        def acquire_us(i):
            t = time.monotonic()
            r = c.call({"op": "acquire", "user": f"u{i}", "task": f"t{i}"})
            assert r.get("granted"), r
            return round((time.monotonic() - t) * 1e6)
        out["first_acquire_stored_us"] = acquire_us(7)
        out["second_acquire_us"] = acquire_us(7)
        out["spend_restored"] = c.call({"op": "status", "user": "u7"})[
            "spend"]["requests"]

        base = rss_kib(p.pid)
        t0 = time.monotonic()
        batch = 500
        for start_i in range(0, a.touch, batch):
            # status loads a subject without changing it (an acquire would
            # open a lease, which pins its subjects in memory).
            reqs = [{"op": "status", kind: f"{kind[0]}{i}"}
                    for i in range(start_i, min(a.touch, start_i + batch))
                    for kind in ("user", "task")]
            c.send_lines(reqs)
            for _ in reqs:
                r = c.read()
                assert r.get("ok"), r
        out["touch_s"] = round(time.monotonic() - t0, 2)
        out["loads_per_s"] = round(2 * a.touch / (time.monotonic() - t0))
        out["in_memory_after_touch"] = metric(c, "brake_subjects")
        out["rss_after_touch_kib"] = rss_kib(p.pid)
        out["bytes_per_resident_subject"] = round(
            (out["rss_after_touch_kib"] - base) * 1024 /
            max(1, out["in_memory_after_touch"] - out["in_memory_after_start"]))
        # Now let them go: a short idle time, applied by SIGHUP.
        with open(config, "w") as f:
            json.dump({"subject_idle_ms": 1000,
                       "policies": {"user:*": POLICY}}, f)
        p.send_signal(signal.SIGHUP)
        t0 = time.monotonic()
        deadline = time.monotonic() + 120
        # global, and u7/t7 held by the open lease.
        while metric(c, "brake_subjects") > 3 and time.monotonic() < deadline:
            time.sleep(0.2)
        out["eviction_s"] = round(time.monotonic() - t0, 1)
        out["in_memory_after_idle"] = metric(c, "brake_subjects")
        out["rss_after_eviction_kib"] = rss_kib(p.pid)
        p.terminate()
        p.wait()
        # A restart after kill -9 runs PRAGMA quick_check first.
        p, c, startup = start(braked, sock, db, config)
        p.kill()
        p.wait()
        p, c, startup = start(braked, sock, db, config)
        out["startup_after_kill9_s"] = round(startup, 3)
        p.terminate()
        p.wait()
    if a.json:
        print(json.dumps(out, indent=1))
    else:
        for k, v in out.items():
            print(f"{k:28} {v}")


if __name__ == "__main__":
    sys.exit(main())
