#!/usr/bin/env python3
"""Tests of the brake Python client against a real braked.

    BRAKED=build/daemon/braked python3 clients/python/tests/test_client.py
    python3 clients/python/tests/test_client.py build/daemon/braked [-v]

tests/run runs it (with the pytest files) as ctest's "python-client", against
the pip-installed package. Standard library only.

This file is the entry point: it runs ClientTest (its cases live in
client_live_cases.py) and ExampleTest (client_example_cases.py), and holds
the tests that need no real daemon: RetryTest (retry rules against
client_harness.FakeServer) and FingerprintTest. All of them are skipped when
no braked is found.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

# Imported first: it consumes a braked path argument and puts clients/python
# on sys.path for brake.
import client_harness as harness  # noqa: E402
from client_harness import FakeServer  # noqa: E402
from client_example_cases import ExampleCases  # noqa: E402
from client_live_cases import LiveClientCases  # noqa: E402

import brake  # noqa: E402

setUpModule = harness.set_up_module
tearDownModule = harness.tear_down_module


class ClientTest(LiveClientCases, unittest.TestCase):
    """The client against the shared braked; see client_live_cases.py."""


class ExampleTest(ExampleCases, unittest.TestCase):
    """The examples against the shared braked; see client_example_cases.py."""


class RetryTest(unittest.TestCase):
    """Retry rules against a fake daemon that drops connections."""

    def setUp(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="brake-py-fake-")
        self.addCleanup(shutil.rmtree, self.dir, True)

    def server(self, *handlers) -> FakeServer:
        srv = FakeServer(self.dir, handlers)
        self.addCleanup(srv.close)
        return srv

    @staticmethod
    def drop_after_read(srv, conn, f) -> None:
        srv.read(f)  # read the request, close without an answer

    @staticmethod
    def answer(srv, conn, f) -> None:
        while True:
            req = srv.read(f)
            if req is None:
                return
            reply = {"id": 0, "ok": True, "granted": False,
                     "reason": "rate_limited"}  # a stray reply first
            conn.sendall(json.dumps(reply).encode() + b"\n")
            reply = {"id": req["id"], "ok": True, "version": "fake",
                     "granted": True, "lease": "L1"}
            conn.sendall(json.dumps(reply).encode() + b"\n")

    def test_read_retried_after_lost_connection(self) -> None:
        srv = self.server(self.drop_after_read, self.answer)
        c = brake.Client(srv.path, timeout=2)
        self.assertEqual(c.ping()["version"], "fake")
        self.assertEqual([r["op"] for r in srv.lines], ["ping", "ping"])
        self.assertNotEqual(srv.lines[0]["id"], srv.lines[1]["id"])
        c.close()

    def test_commit_retried_after_lost_connection(self) -> None:
        srv = self.server(self.drop_after_read, self.answer)
        c = brake.Client(srv.path, timeout=2)
        c.request("commit", lease="L1", tokens=5)
        self.assertEqual([r["op"] for r in srv.lines], ["commit", "commit"])
        c.close()

    def test_acquire_not_retried_once_sent(self) -> None:
        srv = self.server(self.drop_after_read, self.answer)
        c = brake.Client(srv.path, timeout=2)
        with self.assertRaises(brake.Unreachable) as cm:
            c.acquire("u", "t")
        self.assertTrue(cm.exception.sent)
        time.sleep(0.1)
        self.assertEqual([r["op"] for r in srv.lines], ["acquire"])
        # The next acquire opens a new connection and is granted.
        self.assertEqual(c.acquire("u", "t").id, "L1")
        c.close()

    def test_acquire_fail_open_when_lost(self) -> None:
        srv = self.server(self.drop_after_read, self.answer)
        c = brake.Client(srv.path, timeout=2, fail_open=True)
        with self.assertLogs("brake", "WARNING"):
            self.assertTrue(c.acquire("u", "t").fail_open)
        c.close()

    def test_timeout(self) -> None:
        def hang(srv, conn, f):
            srv.read(f)
            time.sleep(1.5)

        srv = self.server(hang)
        c = brake.Client(srv.path, timeout=0.3)
        t0 = time.monotonic()
        with self.assertRaises(brake.Unreachable) as cm:
            c.status(user="u")
        self.assertLess(time.monotonic() - t0, 1.2)
        self.assertIn("no answer", str(cm.exception))
        c.close()

    def test_connection_error_without_id(self) -> None:
        def refuse(srv, conn, f):
            conn.sendall(b'{"ok":false,"error":{"code":"too_many_connections",'
                         b'"message":"max_connections 1 reached"}}\n')

        srv = self.server(refuse)
        c = brake.Client(srv.path, timeout=2)
        with self.assertRaises(brake.TooManyConnections):
            c.ping()
        self.assertEqual(c._idle, [])
        c.close()

    def test_refusal_reported_when_the_send_already_fails(self) -> None:
        # braked answers too_many_connections and closes at once; a request
        # sent after that fails with EPIPE, and the refusal must still be
        # what the caller sees (a race that made the test above flaky).
        def refuse(srv, conn, f):
            conn.sendall(b'{"ok":false,"error":{"code":"too_many_connections",'
                         b'"message":"max_connections 1 reached"}}\n')

        srv = self.server(refuse)

        class Late(brake.Client):
            def _checkout(self):
                conn = super()._checkout()
                time.sleep(0.3)  # the server has answered and closed
                return conn

        c = Late(srv.path, timeout=2)
        with self.assertRaises(brake.TooManyConnections):
            c.ping()
        c.close()


class FingerprintTest(unittest.TestCase):
    def test_stable(self) -> None:
        a = brake.fingerprint("search", {"q": "weather", "opts": {"n": 3,
                                                                  "lang": "en"}})
        b = brake.fingerprint("search", {"opts": {"lang": "en", "n": 3},
                                         "q": "weather"})
        self.assertEqual(a, b)
        self.assertRegex(a, r"^[0-9a-f]{32}$")
        # The formula is part of the API: pinned.
        expected = hashlib.sha256(
            b'search\n{"opts":{"lang":"en","n":3},"q":"weather"}'
        ).hexdigest()[:32]
        self.assertEqual(a, expected)
        self.assertEqual(brake.fingerprint("read_file", {"path": "/etc/hosts"}),
                         "70facbdc1cec89891b303b395ce7cea7")

    def test_differs(self) -> None:
        base = brake.fingerprint("search", {"q": "weather"})
        self.assertNotEqual(base, brake.fingerprint("search", {"q": "news"}))
        self.assertNotEqual(base, brake.fingerprint("fetch", {"q": "weather"}))
        self.assertNotEqual(brake.fingerprint("f", [1, 2]),
                            brake.fingerprint("f", [2, 1]))
        self.assertEqual(brake.fingerprint("f", {"é": "ü"}),
                         brake.fingerprint("f", {"é": "ü"}))
        self.assertEqual(len(brake.fingerprint("f")), 32)
        with self.assertRaises(ValueError):
            brake.fingerprint("f", {"x": float("nan")})


if __name__ == "__main__":
    unittest.main()
