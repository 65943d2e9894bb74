"""A real braked for the docs test: Daemon (a braked on a temporary socket and
database), Conn (one connection to it, JSON lines), ok() (a reply must be ok)
and DaemonCase (a TestCase that gives each test a fresh braked).
"""

import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import unittest

from docs_env import BRAKED


class Daemon:
    """A braked on a temporary socket and database."""

    def __init__(self, config=None):
        self.dir = tempfile.mkdtemp(prefix="brake-docs-")
        self.sock = os.path.join(self.dir, "braked.sock")
        args = [BRAKED, "--socket", self.sock, "--db",
                os.path.join(self.dir, "brake.db")]
        if config is not None:
            path = os.path.join(self.dir, "config.json")
            with open(path, "w") as f:
                f.write(config)
            args += ["--config", path]
        self.log = open(os.path.join(self.dir, "braked.log"), "ab")
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=self.log,
                                     stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while True:
            if self.proc.poll() is not None:
                self.log.close()
                raise RuntimeError("braked exited: " + self.tail())
            try:
                self.conn = Conn(self.sock)
                break
            except OSError:
                if time.monotonic() > deadline:
                    self.proc.kill()
                    self.proc.wait()
                    self.log.close()
                    raise RuntimeError("braked did not start: " + self.tail())
                time.sleep(0.01)

    def tail(self) -> str:
        with open(os.path.join(self.dir, "braked.log"), errors="replace") as f:
            return f.read()[-2000:]

    def close(self):
        self.conn.close()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


class Conn:
    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.settimeout(10)
        try:
            self.sock.connect(path)
        except OSError:
            self.sock.close()
            raise
        self.file = self.sock.makefile("rb")
        self.next_id = 1

    def send(self, request: dict):
        self.sock.sendall(json.dumps(request).encode() + b"\n")

    def recv(self) -> dict:
        line = self.file.readline()
        if not line:
            raise AssertionError("braked closed the connection")
        return json.loads(line)

    def call(self, op: str, **fields) -> dict:
        req = {"id": self.next_id, "op": op}
        self.next_id += 1
        req.update(fields)
        self.send(req)
        reply = self.recv()
        assert reply.get("id") == req["id"], (req, reply)
        return reply

    def pipeline(self, requests):
        data = b""
        for r in requests:
            data += json.dumps(r).encode() + b"\n"
        self.sock.sendall(data)
        return [self.recv() for _ in requests]

    def close(self):
        self.file.close()
        self.sock.close()


def ok(test, reply, what=""):
    test.assertTrue(reply.get("ok"), "%s: %s" % (what, reply))
    return reply


class DaemonCase(unittest.TestCase):
    """Each test gets a fresh braked: self.d, and a connection self.c."""

    def setUp(self):
        self.d = Daemon()
        self.c = self.d.conn

    def tearDown(self):
        self.d.close()
