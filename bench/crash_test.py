#!/usr/bin/env python3
"""Crash test for braked, full length.

N connections (default 50) acquire and commit in a loop, each as a user of
its own, while the daemon is SIGKILLed every 1-3 s and restarted on the same
database; the clients reconnect and carry on. Every client logs what the
daemon acknowledged. At the end the daemon is killed once more, restarted,
and what it restored (status spend and the ledger through `usage`) is
compared with the logs. Python 3 standard library only.

Bookkeeping (the same as tests/integration/crash_test.cc):
- every connection a client opens is an "epoch" with a task of its own
  (u<i>-e<n>), so the ledger grouped by task tells, per epoch, how many of
  its commits were restored;
- a commit whose reply did not arrive is "unknown": it may or may not count;
- strict: an acknowledged acquire is on disk, so a client retries an unknown
  commit on its next connection: "ok" means the first try died with the
  daemon and this one counts, "duplicate" or "unknown_lease" means the first
  try was committed. Restored figures must then equal the logs exactly;
- batched: unknown commits are not retried. What survives of an epoch must
  be a prefix of its commits; the lost tail is reported with the age of its
  oldest commit (how long before the SIGKILL it was acknowledged).

Figures printed per mode: acknowledged, unknown, restored, lost,
double-counted (commits and tokens), plus kills, restart times and, for
batched, loss per kill and the ages of lost commits.

  python3 bench/crash_test.py --braked build/daemon/braked --mode both
"""

import argparse
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time


def mono_ms():
    return time.monotonic() * 1000.0


class Closed(Exception):
    """The connection broke or did not answer in time."""


class Conn:
    def __init__(self, path, timeout=5.0):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        try:
            self.sock.connect(path)
        except OSError:
            self.sock.close()
            raise
        self.buf = b""

    def call(self, request):
        try:
            self.sock.sendall(json.dumps(request).encode() + b"\n")
            while b"\n" not in self.buf:
                chunk = self.sock.recv(65536)
                if not chunk:
                    raise Closed("eof")
                self.buf += chunk
        except (OSError, socket.timeout) as e:
            raise Closed(str(e))
        line, _, self.buf = self.buf.partition(b"\n")
        return json.loads(line)

    def close(self):
        self.sock.close()


class Daemon:
    def __init__(self, braked, workdir, config):
        self.braked = braked
        self.socket = os.path.join(workdir, "braked.sock")
        self.db = os.path.join(workdir, "braked.db")
        self.log_path = os.path.join(workdir, "braked.log")
        self.config = os.path.join(workdir, "braked.json")
        with open(self.config, "w") as f:
            json.dump(config, f)
        self.proc = None

    def start(self, timeout_s=10.0):
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            [self.braked, "--socket", self.socket, "--db", self.db,
             "--config", self.config],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        log.close()
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            try:
                Conn(self.socket).close()
                return True
            except OSError:
                time.sleep(0.005)
        self.kill9()
        return False

    def kill9(self):
        if self.proc is not None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()
            self.proc = None

    def stop(self):
        if self.proc is not None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.kill9()
            self.proc = None


class Shared:
    def __init__(self, socket_path, strict):
        self.socket = socket_path
        self.strict = strict
        self.stop_clients = False
        # Incarnation of braked running (or about to start): bumped after a
        # kill, before the next start.
        self.gen = 0


class TaskLog:
    __slots__ = ("gen", "acked", "resolved_calls", "resolved_tokens",
                 "unknown", "unknown_tokens")

    def __init__(self, gen):
        self.gen = gen
        self.acked = []  # [(tokens, ack_ms)] in order
        self.resolved_calls = 0
        self.resolved_tokens = 0
        self.unknown = False
        self.unknown_tokens = 0


class ClientLog:
    def __init__(self, user):
        self.user = user
        self.tasks = {}
        self.unknown = 0
        self.retried_ok = 0
        self.retried_counted = 0
        self.connects = 0
        self.errors = []

    def note(self, what):
        if len(self.errors) < 10:
            self.errors.append(what)


def run_client(index, sh, log, seed):
    rng = random.Random(seed * 100003 + index)
    pending = None  # [lease, task, tokens, counted]
    epoch = 0
    while True:
        if sh.stop_clients and pending is None:
            return
        g1 = sh.gen
        try:
            c = Conn(sh.socket)
        except OSError:
            time.sleep(0.005)
            continue
        if sh.gen != g1:
            c.close()
            continue
        epoch += 1
        log.connects += 1
        task = "%s-e%d" % (log.user, epoch)
        tlog = log.tasks[task] = TaskLog(g1)
        try:
            if pending is not None:  # strict only
                lease, ptask, ptokens, _ = pending
                r = c.call({"op": "commit", "lease": lease,
                            "tokens": ptokens})
                owner = log.tasks[ptask]
                if r.get("ok") and not r.get("duplicate"):
                    if r.get("charged_tokens") != ptokens:
                        log.note("retried commit charged wrong: %r" % r)
                    owner.acked.append((ptokens, mono_ms()))
                    log.retried_ok += 1
                elif r.get("ok") or \
                        r.get("error", {}).get("code") == "unknown_lease":
                    owner.resolved_calls += 1
                    owner.resolved_tokens += ptokens
                    log.retried_counted += 1
                else:
                    log.note("retried commit: %r" % r)
                pending = None
            while not sh.stop_clients:
                estimate = rng.randint(1, 2000)
                actual = rng.randint(1, 2000)
                a = c.call({"op": "acquire", "user": log.user, "task": task,
                            "tokens": estimate})
                if not a.get("ok") or not a.get("granted") or \
                        not isinstance(a.get("lease"), str):
                    log.note("acquire: %r" % a)
                    time.sleep(0.02)
                    continue
                pending = [a["lease"], task, actual, False]
                r = c.call({"op": "commit", "lease": a["lease"],
                            "tokens": actual})
                if not r.get("ok") or r.get("duplicate") or \
                        r.get("charged_tokens") != actual:
                    log.note("commit: %r" % r)
                else:
                    tlog.acked.append((actual, mono_ms()))
                pending = None
        except Closed:
            if pending is not None:
                if not pending[3]:
                    log.unknown += 1
                pending[3] = True
                if not sh.strict:
                    owner = log.tasks[pending[1]]
                    owner.unknown = True
                    owner.unknown_tokens = pending[2]
                    pending = None
        finally:
            c.close()


def metric(text, name):
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return None


def run_mode(args, strict):
    workdir = tempfile.mkdtemp(prefix="brake-crash-")
    config = {
        "durability": "strict" if strict else "batched",
        "flush_interval_ms": args.flush_interval_ms,
        "policies": {"user:*": {"limits": [
            {"name": "tq", "resource": "tokens", "algorithm": "quota",
             "limit": 10**12, "period": "total"}]}},
    }
    d = Daemon(args.braked, workdir, config)
    if not d.start():
        sys.exit("braked did not start; see " + d.log_path)
    sh = Shared(d.socket, strict)
    logs = [ClientLog("u%d" % i) for i in range(args.connections)]
    threads = [threading.Thread(target=run_client,
                                args=(i, sh, logs[i], args.seed))
               for i in range(args.connections)]
    for t in threads:
        t.start()
    rng = random.Random(args.seed)
    kill_ms = []     # [g] = when incarnation g was killed
    start_ms = [mono_ms()]
    restart_ms = []
    storage = []     # per incarnation: (batches, mean commit ms) at kill
    until = mono_ms() + args.seconds * 1000.0
    while True:
        time.sleep(rng.uniform(args.kill_min, args.kill_max))
        if mono_ms() >= until:
            break
        try:
            m = Conn(d.socket, timeout=2.0)
            text = m.call({"op": "metrics"})["text"]
            m.close()
            b = metric(text, "brake_storage_batches_total") or 0
            s = metric(text, "brake_storage_commit_seconds_total") or 0
            storage.append((b, 1000.0 * s / b if b else 0.0))
        except (OSError, Closed):
            storage.append((0, 0.0))
        kill_ms.append(mono_ms())
        d.kill9()
        sh.gen += 1
        t0 = mono_ms()
        if not d.start():
            sys.exit("braked did not restart; see " + d.log_path)
        restart_ms.append(mono_ms() - t0)
        start_ms.append(mono_ms())
    sh.stop_clients = True
    for t in threads:
        t.join()
    kill_ms.append(mono_ms())
    d.kill9()
    if not d.start():
        sys.exit("braked did not restart; see " + d.log_path)

    c = Conn(d.socket, timeout=30.0)
    r = dict(acked_calls=0, acked_tokens=0, unknown=0, retried_ok=0,
             retried_counted=0, restored_calls=0, restored_tokens=0,
             lost_calls=0, lost_tokens=0, double_calls=0, double_tokens=0,
             connects=0)
    problems = []
    lost_ages = []              # ms before its kill, per lost epoch
    lost_per_kill = {}          # gen -> lost commits
    age_per_kill = {}           # gen -> oldest lost ack, ms before the kill
    for log in logs:
        for e in log.errors:
            problems.append(log.user + ": " + e)
        r["unknown"] += log.unknown
        r["retried_ok"] += log.retried_ok
        r["retried_counted"] += log.retried_counted
        r["connects"] += log.connects
        usage = c.call({"op": "usage", "user": log.user})
        by_task = {row["key"]: (row["calls"], row["tokens"])
                   for row in usage["rows"]}
        total = c.call({"op": "usage", "user": log.user,
                        "by": "total"})["rows"][0]
        status = c.call({"op": "status", "user": log.user})
        spend = status["spend"]
        if total["tokens"] != spend["tokens"] or \
                total["calls"] != spend["requests"]:
            problems.append("%s: ledger %r vs status spend %r"
                            % (log.user, total, spend))
        quota = [l for l in status["limits"] if l["name"] == "tq"]
        if not quota or quota[0]["used"] != \
                spend["tokens"] + status["reserved"]["tokens"]:
            problems.append("%s: quota %r vs spend %r + reserved %r" % (
                log.user, quota, spend, status["reserved"]))
        for task, t in log.tasks.items():
            rc, rt = by_task.pop(task, (0, 0))
            ac = len(t.acked)
            at = sum(x[0] for x in t.acked)
            r["acked_calls"] += ac
            r["acked_tokens"] += at
            r["restored_calls"] += rc
            r["restored_tokens"] += rt
            where = "%s acked %d/%d resolved %d/%d unknown %s/%d " \
                    "restored %d/%d" % (task, ac, at, t.resolved_calls,
                                        t.resolved_tokens, t.unknown,
                                        t.unknown_tokens, rc, rt)
            if strict:
                wc = ac + t.resolved_calls
                wt = at + t.resolved_tokens
                if rc < wc or rt < wt:
                    r["lost_calls"] += wc - rc
                    r["lost_tokens"] += wt - rt
                    problems.append("lost: " + where)
                elif rc > wc or rt > wt:
                    r["double_calls"] += rc - wc
                    r["double_tokens"] += rt - wt
                    problems.append("counted twice: " + where)
                continue
            may = ac + (1 if t.unknown else 0)
            if rc > may:
                r["double_calls"] += rc - may
                r["double_tokens"] += max(0, rt - at - t.unknown_tokens)
                problems.append("counted twice: " + where)
            elif rc >= ac:
                want = at + (t.unknown_tokens if rc > ac else 0)
                if rt != want:
                    problems.append("wrong tokens: " + where)
            else:
                r["lost_calls"] += ac - rc
                r["lost_tokens"] += at - rt
                if rt != sum(x[0] for x in t.acked[:rc]):
                    problems.append("not a prefix: " + where)
                age = kill_ms[t.gen] - t.acked[rc][1]
                lost_ages.append(age)
                age_per_kill[t.gen] = max(age_per_kill.get(t.gen, 0), age)
                lost_per_kill[t.gen] = lost_per_kill.get(t.gen, 0) + ac - rc
        for task in by_task:
            problems.append("%s: ledger has a task no client used: %s"
                            % (log.user, task))
    c.close()
    d.stop()

    mode = "strict" if strict else "batched"
    uptimes = [kill_ms[g] - start_ms[g] for g in range(len(kill_ms))]
    out = {
        "mode": mode,
        "connections": args.connections,
        "seconds": args.seconds,
        "kills": len(kill_ms),
        "restart_ms_max": round(max(restart_ms), 1) if restart_ms else 0,
        "restart_ms_mean": round(sum(restart_ms) / len(restart_ms), 1)
        if restart_ms else 0,
        "uptime_ms_mean": round(sum(uptimes) / len(uptimes)),
        **r,
        "commits_per_s": round(r["acked_calls"] / args.seconds),
        "mean_commit_ms": round(sum(x[1] for x in storage) / len(storage), 2)
        if storage else 0,
        "problems": problems[:20],
    }
    if not strict:
        lost_ages.sort()
        out["lost_epochs"] = len(lost_ages)
        out["lost_age_ms_max"] = round(lost_ages[-1], 1) if lost_ages else 0
        out["lost_age_ms_median"] = \
            round(lost_ages[len(lost_ages) // 2], 1) if lost_ages else 0
        out["lost_per_kill_max"] = max(lost_per_kill.values()) \
            if lost_per_kill else 0
        out["kills_with_loss"] = len(lost_per_kill)
        out["per_kill"] = [
            {"uptime_ms": round(uptimes[g]),
             "lost": lost_per_kill.get(g, 0),
             "oldest_lost_ms": round(age_per_kill.get(g, 0), 1),
             "mean_commit_ms": round(storage[g][1], 2)
             if g < len(storage) else None,
             "final": g == len(kill_ms) - 1}
            for g in range(len(kill_ms))]
    if not args.keep:
        shutil.rmtree(workdir, ignore_errors=True)
    else:
        out["workdir"] = workdir
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--braked", default="build/daemon/braked")
    p.add_argument("--mode", choices=["strict", "batched", "both"],
                   default="both")
    p.add_argument("--connections", type=int, default=50)
    p.add_argument("--seconds", type=float, default=60)
    p.add_argument("--kill-min", type=float, default=1.0)
    p.add_argument("--kill-max", type=float, default=3.0)
    p.add_argument("--flush-interval-ms", type=int, default=10)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--keep", action="store_true",
                   help="keep the work directory (database, log)")
    p.add_argument("--json", action="store_true")
    p.add_argument("--verbose", action="store_true",
                   help="batched: print the loss of every kill")
    args = p.parse_args()
    modes = ["strict", "batched"] if args.mode == "both" else [args.mode]
    results = [run_mode(args, m == "strict") for m in modes]
    failed = False
    for res in results:
        if args.json:
            print(json.dumps(res))
        else:
            print("%s: %d connections, %gs, %d kills (restart mean %.1f ms, "
                  "max %.1f ms), %d reconnects" % (
                      res["mode"], res["connections"], res["seconds"],
                      res["kills"], res["restart_ms_mean"],
                      res["restart_ms_max"], res["connects"]))
            print("  acknowledged %d commits / %d tokens (%d/s); "
                  "unknown %d" % (res["acked_calls"], res["acked_tokens"],
                                  res["commits_per_s"], res["unknown"]))
            if res["mode"] == "strict":
                print("  unknown resolved by retry: %d committed by the "
                      "retry, %d already counted" % (
                          res["retried_ok"], res["retried_counted"]))
            print("  restored %d / %d; lost %d / %d; double-counted %d / %d"
                  % (res["restored_calls"], res["restored_tokens"],
                     res["lost_calls"], res["lost_tokens"],
                     res["double_calls"], res["double_tokens"]))
            if res["mode"] == "batched":
                print("  loss at %d of %d kills, at most %d commits per "
                      "kill; lost commits acknowledged at most %.1f ms "
                      "(median epoch %.1f ms) before the kill; mean "
                      "storage commit %.2f ms" % (
                          res["kills_with_loss"], res["kills"],
                          res["lost_per_kill_max"], res["lost_age_ms_max"],
                          res["lost_age_ms_median"], res["mean_commit_ms"]))
            if args.verbose and res["mode"] == "batched":
                for k in res["per_kill"]:
                    print("    kill: %r" % k)
            for prob in res["problems"]:
                print("  PROBLEM: " + prob)
        failed = failed or res["double_calls"] > 0 or bool(res["problems"])
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
