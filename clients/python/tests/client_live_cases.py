"""The client's cases against the shared real braked (client_harness).

LiveClientCases holds them; test_client.py runs them as ClientTest, so their
names stay __main__.ClientTest.test_*. It needs unittest.TestCase as the other
base and client_harness.set_up_module() to have run. Topics: the hot path
(acquire, commit, cancel, denials, waiting), Lease as a context manager,
latency, reads and admin ops, threads, restarts and outages (the examples
are in client_example_cases.py).
"""

from __future__ import annotations

import os
import signal
import socket
import tempfile
import threading
import time
from unittest import mock

import client_harness as harness
from client_harness import Daemon, name

import brake  # found through the sys.path entry client_harness adds


class LiveClientCases:
    """Mixed into ClientTest (test_client.py) with unittest.TestCase."""

    def setUp(self) -> None:
        self.client = brake.Client(harness.daemon.sock, timeout=5)
        self.addCleanup(self.client.close)

    # ---- the hot path ----------------------------------------------------

    def test_ping(self) -> None:
        self.assertRegex(self.client.ping()["version"], r"^\d+\.\d+")

    def test_acquire_commit(self) -> None:
        user = name("u")
        lease = self.client.acquire(user, name("t"), tokens=100)
        self.assertIsInstance(lease.id, str)
        self.assertFalse(lease.fail_open)
        self.assertEqual(lease.waited_ms, 0)
        self.assertEqual(
            self.client.status(user=user)["reserved"]["tokens"], 100)
        reply = lease.commit(tokens=80, latency_ms=5)
        self.assertEqual(reply["charged_tokens"], 80)
        self.assertEqual(lease.settled, "committed")
        again = lease.commit(tokens=999)
        self.assertTrue(again.get("duplicate"))
        self.assertEqual(again["charged_tokens"], 80)
        status = self.client.status(user=user)
        self.assertEqual(status["spend"]["tokens"], 80)
        self.assertEqual(status["reserved"]["tokens"], 0)

    def test_commit_split_and_estimate(self) -> None:
        user = name("u")
        lease = self.client.acquire(user, name("t"), tokens=70)
        self.assertEqual(
            lease.commit(input_tokens=30, output_tokens=12)["charged_tokens"],
            42)
        lease = self.client.acquire(user, name("t"), tokens=70)
        self.assertEqual(lease.commit()["charged_tokens"], 70)

    def test_cancel(self) -> None:
        user = name("u")
        lease = self.client.acquire(user, name("t"), tokens=50)
        self.assertTrue(lease.cancel()["ok"])
        self.assertEqual(lease.settled, "cancelled")
        status = self.client.status(user=user)
        self.assertEqual(status["reserved"]["tokens"], 0)
        self.assertEqual(status["spend"]["requests"], 0)
        self.assertTrue(lease.cancel().get("duplicate"))

    def test_denied_attributes(self) -> None:
        user = name("u")
        self.client.policy_set("user:" + user, limits=[
            {"name": "rps", "resource": "requests",
             "algorithm": "token_bucket", "rate": 1, "per_ms": 60000,
             "burst": 1}])
        self.client.acquire(user, name("t")).commit()
        with self.assertRaises(brake.Denied) as cm:
            self.client.acquire(user, name("t"))
        d = cm.exception
        self.assertIsInstance(d, brake.Error)
        self.assertNotIsInstance(d, brake.BrakeError)
        self.assertEqual(d.reason, "rate_limited")
        self.assertEqual(d.scope, "user:" + user)
        self.assertEqual(d.limit, "rps")
        self.assertIsNone(d.cause)
        self.assertIsInstance(d.retry_after_ms, int)
        self.assertTrue(0 < d.retry_after_ms <= 60000, d.retry_after_ms)
        self.assertAlmostEqual(d.retry_after, d.retry_after_ms / 1000.0)
        self.assertIs(d.reply["granted"], False)
        self.assertIn("rate_limited", str(d))

    def test_denied_never(self) -> None:
        user = name("u")
        self.client.policy_set("user:" + user, limits=[
            {"name": "cap", "resource": "tokens", "algorithm": "quota",
             "limit": 100, "period": "total"}])
        with self.assertRaises(brake.Denied) as cm:
            self.client.acquire(user, name("t"), tokens=1000)
        self.assertIsNone(cm.exception.retry_after_ms)
        self.assertIsNone(cm.exception.retry_after)
        self.assertEqual(cm.exception.limit, "cap")

    def test_denied_breaker_cause(self) -> None:
        user, task = name("u"), name("t")
        self.client.acquire(user, task).commit()
        tripped = self.client.breaker_trip("task:" + task, open_ms=60000)
        self.assertEqual(tripped["breakers"][0]["state"], "open")
        scopes = [b["scope"] for b in self.client.breaker_list()["breakers"]]
        self.assertIn("task:" + task, scopes)
        with self.assertRaises(brake.Denied) as cm:
            self.client.acquire(user, task)
        self.assertEqual(cm.exception.reason, "breaker_open")
        self.assertEqual(cm.exception.cause, "manual")
        self.assertEqual(cm.exception.limit, "breaker")
        self.assertEqual(cm.exception.scope, "task:" + task)
        self.client.breaker_reset("task:" + task)
        self.client.acquire(user, task).cancel()

    def test_loop_breaker_with_fingerprint(self) -> None:
        user, task = name("u"), name("t")
        self.client.policy_set("task:" + task,
                               breaker={"loop": {"repeats": 3,
                                                 "window_ms": 60000}})
        fp = brake.fingerprint("search", {"q": "weather", "n": 3})
        other = brake.fingerprint("search", {"q": "news", "n": 3})
        for _ in range(3):
            self.client.acquire(user, task, fingerprint=fp).commit()
        with self.assertRaises(brake.Denied) as cm:
            self.client.acquire(user, task, fingerprint=other)
        self.assertEqual((cm.exception.reason, cm.exception.cause),
                         ("breaker_open", "loop"))

    def test_waiting_acquire(self) -> None:
        user, res = name("u"), name("r")
        self.client.policy_set("resource:" + res, limits=[
            {"name": "rps", "resource": "requests",
             "algorithm": "token_bucket", "rate": 1, "per_ms": 300,
             "burst": 1}])
        self.client.acquire(user, name("t"), resource=res).commit()
        lease = self.client.acquire(user, name("t"), resource=res,
                                    wait_ms=3000)
        self.assertGreater(lease.waited_ms, 100)
        lease.commit()
        with self.assertRaises(brake.Denied) as cm:
            self.client.acquire(user, name("t"), resource=res, wait_ms=20)
        self.assertEqual(cm.exception.reason, "timeout")

    def test_waiting_acquire_does_not_block_other_threads(self) -> None:
        user, res = name("u"), name("r")
        self.client.policy_set("resource:" + res, limits=[
            {"name": "slow", "resource": "requests",
             "algorithm": "token_bucket", "rate": 1, "per_ms": 800,
             "burst": 1}])
        self.client.acquire(user, name("t"), resource=res).commit()
        got = []
        waiter = threading.Thread(target=lambda: got.append(
            self.client.acquire(user, name("t"), resource=res,
                                wait_ms=3000)))
        waiter.start()
        time.sleep(0.05)
        t0 = time.monotonic()
        self.client.ping()
        self.client.status(user=user)
        self.assertLess(time.monotonic() - t0, 0.3)
        waiter.join(5)
        self.assertEqual(len(got), 1)
        self.assertGreater(got[0].waited_ms, 300)
        got[0].commit()

    # ---- context manager -------------------------------------------------

    def test_context_manager_cancels_without_commit(self) -> None:
        user = name("u")
        with self.client.acquire(user, name("t"), tokens=100) as lease:
            self.assertEqual(
                self.client.status(user=user)["reserved"]["tokens"], 100)
        self.assertEqual(lease.settled, "cancelled")
        status = self.client.status(user=user)
        self.assertEqual(status["reserved"]["tokens"], 0)
        self.assertEqual(status["spend"]["requests"], 0)
        with self.client.acquire(user, name("t"), tokens=100) as lease:
            lease.commit(tokens=60)
        self.assertEqual(lease.settled, "committed")
        self.assertEqual(self.client.status(user=user)["spend"]["tokens"], 60)

    def test_context_manager_commits_error_on_exception(self) -> None:
        user, task = name("u"), name("t")
        self.client.policy_set("task:" + task, breaker={
            "errors": {"ratio": 0.5, "min_calls": 1, "window_ms": 60000},
            "open_ms": 60000})
        with self.assertRaises(ValueError):
            with self.client.acquire(user, task, tokens=40) as lease:
                raise ValueError("the model call failed")
        self.assertEqual(lease.settled, "committed")
        self.assertEqual(lease.result["charged_tokens"], 40)
        self.assertEqual(self.client.status(user=user)["spend"]["tokens"], 40)
        # The outcome was "error": the task's error breaker is open now.
        with self.assertRaises(brake.Denied) as cm:
            self.client.acquire(user, task)
        self.assertEqual(cm.exception.cause, "errors")

    def test_context_manager_commits_reported_usage_on_exception(self) -> None:
        user = name("u")
        with self.assertRaises(ValueError):
            with self.client.acquire(user, name("t"), tokens=400) as lease:
                lease.report(input_tokens=30, output_tokens=5)
                lease.report(output_tokens=7)  # replaces output_tokens only
                raise ValueError("the stream was cut off")
        self.assertEqual(lease.settled, "committed")
        self.assertEqual(lease.result["charged_tokens"], 37)
        self.assertEqual(self.client.status(user=user)["spend"]["tokens"], 37)

    def test_context_manager_keeps_exception_when_daemon_gone(self) -> None:
        d = Daemon(tempfile.mkdtemp(dir=harness.tmp)).start()
        try:
            c = brake.Client(d.sock, timeout=2)
            lease = c.acquire(name("u"), name("t"))
            d.stop()
            with self.assertRaises(KeyError):
                with lease:
                    raise KeyError("original")
            c.close()
        finally:
            d.stop()

    # ---- latency ---------------------------------------------------------

    def test_latency_measured(self) -> None:
        sent = []

        class Spy(brake.Client):
            def request(self, op, extra_timeout=0.0, **fields):
                sent.append((op, fields))
                return super().request(op, extra_timeout, **fields)

        spy = Spy(harness.daemon.sock)
        self.addCleanup(spy.close)
        user, slow_task, fast_task = name("u"), name("t"), name("t")
        breaker = {"slow": {"max_rt_ms": 100, "ratio": 0.5, "min_calls": 1,
                            "window_ms": 60000}, "open_ms": 60000}
        for task in (slow_task, fast_task):
            spy.policy_set("task:" + task, breaker=breaker)
        with spy.acquire(user, slow_task) as lease:
            time.sleep(0.2)
            lease.commit()
        commit = [f for op, f in sent if op == "commit"][-1]
        self.assertGreaterEqual(commit["latency_ms"], 190)
        self.assertLess(commit["latency_ms"], 2000)
        with spy.acquire(user, fast_task) as lease:
            lease.commit()
        commit = [f for op, f in sent if op == "commit"][-1]
        self.assertLess(commit["latency_ms"], 100)
        # The daemon saw them too: the slow task's breaker tripped.
        spy.acquire(user, fast_task).cancel()
        with self.assertRaises(brake.Denied) as cm:
            spy.acquire(user, slow_task)
        self.assertEqual(cm.exception.cause, "slow_calls")
        # An explicit latency wins.
        with spy.acquire(user, fast_task) as lease:
            lease.commit(latency_ms=7)
        self.assertEqual([f for op, f in sent if op == "commit"][-1]
                         ["latency_ms"], 7)

    # ---- reads and admin -------------------------------------------------

    def test_policy_ops(self) -> None:
        scope = "user:" + name("u")
        limits = [{"name": "rpm", "resource": "requests",
                   "algorithm": "fixed_window", "limit": 100,
                   "window_ms": 60000}]
        set_reply = self.client.policy_set(scope, limits=limits)
        self.assertEqual(set_reply["scope"], scope)
        got = self.client.policy_get(scope)["policy"]
        self.assertEqual(got["limits"][0]["name"], "rpm")
        self.assertIn(scope, [p["scope"] for p in
                              self.client.policy_list()["policies"]])
        self.assertIs(self.client.policy_delete(scope)["deleted"], True)
        self.assertIs(self.client.policy_delete(scope)["deleted"], False)
        self.assertIsNone(self.client.policy_get(scope)["policy"])
        with self.assertRaises(brake.BadRequest) as cm:
            self.client.policy_set(scope, limits=[{"name": "x", "burts": 1}])
        self.assertEqual(cm.exception.code, "bad_request")
        self.assertTrue(cm.exception.message)

    def test_status_usage_prices(self) -> None:
        user, task, model = name("u"), name("t"), name("m")
        self.client.prices_set(model, 2.5, 10)
        self.client.policy_set("user:" + user, limits=[
            {"name": "daily", "resource": "usd", "algorithm": "quota",
             "limit": 5.0, "period": "day"}])
        lease = self.client.acquire(user, task, tokens=2000, model=model,
                                    resource="openai")
        reply = lease.commit(input_tokens=1000, output_tokens=500)
        self.assertEqual(reply["charged_tokens"], 1500)
        self.assertAlmostEqual(reply["charged_usd"], 0.0075, places=9)
        status = self.client.status(user=user)
        self.assertEqual(status["scope"], "user:" + user)
        self.assertEqual(status["limits"][0]["name"], "daily")
        self.assertAlmostEqual(status["spend"]["usd"], 0.0075, places=9)
        self.assertEqual(self.client.status(task=task)["scope"],
                         "task:" + task)
        self.assertEqual(self.client.status(resource="openai")["scope"],
                         "resource:openai")
        rows = self.client.usage(user, by="model")["rows"]
        self.assertEqual([(r["key"], r["tokens"], r["input_tokens"])
                          for r in rows], [(model, 1500, 1000)])
        rows = self.client.usage(user)["rows"]
        self.assertEqual(rows[0]["key"], task)
        self.assertEqual(self.client.usage(user, task=name("t"))["rows"], [])
        future = int(time.time() * 1000) + 3600000
        self.assertEqual(self.client.usage(user, since_ms=future)["rows"], [])
        self.client.reset("user:" + user)
        self.assertEqual(self.client.status(user=user)["spend"]["usd"], 0)

    def test_metrics(self) -> None:
        text = self.client.metrics()
        self.assertIsInstance(text, str)
        self.assertIn("# TYPE", text)

    def test_errors(self) -> None:
        user, task = name("u"), name("t")
        self.client.acquire(user, task).commit()
        with self.assertRaises(brake.Forbidden) as cm:
            self.client.acquire(name("u"), task)
        self.assertEqual(cm.exception.code, "forbidden")
        self.assertIsInstance(cm.exception, brake.BrakeError)
        with self.assertRaises(brake.BadRequest) as cm:
            self.client.acquire("", name("t"))
        self.assertIn("user", cm.exception.message)
        with self.assertRaises(brake.BadRequest):
            self.client.acquire(user, name("t"), tokens=1.5)
        with self.assertRaises(brake.UnknownLease):
            self.client.request("commit", lease="no-such-lease")
        with self.assertRaises(brake.UnknownOp):
            self.client.request("no.such.op")
        self.assertTrue(self.client.ping()["ok"])  # the connection survived

    # ---- threads, restarts, outages --------------------------------------

    def test_threads_share_one_client(self) -> None:
        user = name("u")
        errors = []
        n_threads, per_thread = 8, 40

        def work(k: int) -> None:
            try:
                for i in range(per_thread):
                    lease = self.client.acquire(user, "%s-%d-%d" % (user, k, i
                                                                    % 3),
                                                tokens=10)
                    if i % 4 == 3:
                        lease.cancel()
                    else:
                        self.assertEqual(lease.commit(tokens=5)
                                         ["charged_tokens"], 5)
                    if i % 10 == 0:
                        self.client.status(user=user)
            except Exception as e:  # noqa: BLE001
                errors.append(e)

        threads = [threading.Thread(target=work, args=(k,))
                   for k in range(n_threads)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        self.assertEqual(errors, [])
        committed = n_threads * per_thread * 3 // 4
        status = self.client.status(user=user)
        self.assertEqual(status["spend"]["requests"], committed)
        self.assertEqual(status["spend"]["tokens"], committed * 5)
        self.assertEqual(status["reserved"]["tokens"], 0)
        self.assertLessEqual(len(self.client._idle), self.client.pool_size)

    def test_reconnect_after_restart(self) -> None:
        d = Daemon(tempfile.mkdtemp(dir=harness.tmp)).start()
        self.addCleanup(d.stop)
        c = brake.Client(d.sock, timeout=5)
        self.addCleanup(c.close)
        user = name("u")
        c.policy_set("user:" + user, limits=[
            {"name": "cap", "resource": "tokens", "algorithm": "quota",
             "limit": 1000, "period": "total"}])
        lease = c.acquire(user, name("t"), tokens=100)
        c.ping()
        d.stop(signal.SIGTERM)
        with self.assertRaises(brake.Unreachable):
            c.ping()
        d.start()
        self.assertTrue(c.ping()["ok"])
        # The open lease and the policy survived the restart.
        self.assertEqual(lease.commit(tokens=90)["charged_tokens"], 90)
        self.assertEqual(c.policy_get("user:" + user)["policy"]["limits"][0]
                         ["name"], "cap")
        # A restart while connections sit idle in the pool: no error at all.
        c.acquire(user, name("t")).cancel()
        d.stop(signal.SIGTERM)
        d.start()
        lease = c.acquire(user, name("t"), tokens=10)
        lease.commit()
        self.assertEqual(c.status(user=user)["spend"]["tokens"], 100)

    def test_unavailable_when_unreachable(self) -> None:
        missing = brake.Client(os.path.join(harness.tmp, "missing.sock"),
                               timeout=1)
        t0 = time.monotonic()
        with self.assertRaises(brake.Unavailable) as cm:
            missing.ping()
        self.assertLess(time.monotonic() - t0, 1)
        self.assertIsInstance(cm.exception, brake.Unreachable)
        self.assertEqual(cm.exception.code, "unreachable")
        self.assertFalse(cm.exception.sent)
        with self.assertRaises(brake.Unreachable):
            missing.acquire("u", "t")
        # A socket file whose daemon is gone: connection refused.
        stale = os.path.join(harness.tmp, "stale.sock")
        s = socket.socket(socket.AF_UNIX)
        s.bind(stale)
        s.close()
        with self.assertRaises(brake.Unreachable):
            brake.Client(stale).status(user="u")

    def test_fail_open(self) -> None:
        c = brake.Client(os.path.join(harness.tmp, "missing.sock"),
                         fail_open=True)
        with self.assertLogs("brake", "WARNING"):
            lease = c.acquire("u", "t", tokens=100)
        self.assertTrue(lease.fail_open)
        self.assertIsNone(lease.id)
        self.assertIsInstance(lease.error, brake.Unreachable)
        self.assertEqual(lease.commit(tokens=5), {"ok": True,
                                                  "fail_open": True})
        with c.acquire("u", "t") as lease:
            pass
        self.assertEqual(lease.settled, "cancelled")
        with self.assertRaises(RuntimeError):
            with c.acquire("u", "t"):
                raise RuntimeError("boom")
        # Only acquire, commit and cancel fail open.
        with self.assertRaises(brake.Unreachable):
            c.status(user="u")
        # A live daemon's denials still deny.
        live = brake.Client(harness.daemon.sock, fail_open=True)
        self.addCleanup(live.close)
        user = name("u")
        live.policy_set("user:" + user, limits=[
            {"name": "cap", "resource": "requests", "algorithm": "quota",
             "limit": 1, "period": "total"}])
        live.acquire(user, name("t")).commit()
        with self.assertRaises(brake.Denied):
            live.acquire(user, name("t"))
        # A real lease whose daemon went away: commit warns, does not raise.
        d = Daemon(tempfile.mkdtemp(dir=harness.tmp)).start()
        self.addCleanup(d.stop)
        c2 = brake.Client(d.sock, fail_open=True, timeout=2)
        lease = c2.acquire(name("u"), name("t"))
        d.stop()
        with self.assertLogs("brake", "WARNING"):
            reply = lease.commit()
        self.assertEqual((reply["ok"], reply["fail_open"]), (False, True))

    def test_default_socket_path(self) -> None:
        with mock.patch.dict(os.environ, {"BRAKE_SOCKET": "/x/y.sock",
                                          "XDG_RUNTIME_DIR": "/run/user/7"}):
            self.assertEqual(brake.default_socket_path(), "/x/y.sock")
            self.assertEqual(brake.Client().socket_path, "/x/y.sock")
        with mock.patch.dict(os.environ, {"XDG_RUNTIME_DIR": "/run/user/7"}):
            os.environ.pop("BRAKE_SOCKET", None)
            self.assertEqual(brake.default_socket_path(),
                             "/run/user/7/brake/braked.sock")
        with mock.patch.dict(os.environ, {"XDG_RUNTIME_DIR": ""}):
            os.environ.pop("BRAKE_SOCKET", None)
            self.assertEqual(brake.default_socket_path(),
                             "/tmp/brake-%d/braked.sock" % os.getuid())
