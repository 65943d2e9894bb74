"""Shared fixtures of the brake Python client tests (test_client.py).

Finds braked (a path argument, $BRAKED, or build*/daemon/braked in the repo),
puts clients/python on sys.path for brake, and holds the fakes: Daemon
(a real braked on a temporary socket and database), FakeServer (a scripted
Unix socket server) and the one shared braked the live tests talk to, which
set_up_module() starts and tear_down_module() stops. Standard library only.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
PYROOT = os.path.dirname(HERE)
# tests/run sets BRAKE_TEST_INSTALLED to the venv the package was installed
# in: then brake is imported from there, never from the source tree.
INSTALLED = os.environ.get("BRAKE_TEST_INSTALLED", "")
if not INSTALLED and PYROOT not in sys.path:
    sys.path.insert(0, PYROOT)

# The client logs a warning whenever it fails open; the tests check those
# with assertLogs and keep them off the output otherwise.
logging.getLogger("brake").addHandler(logging.NullHandler())


def _find_braked() -> str:
    if (os.path.basename(sys.argv[0]) == "test_client.py"
            and len(sys.argv) > 1 and not sys.argv[1].startswith("-")):
        return sys.argv.pop(1)
    env = os.environ.get("BRAKED")
    if env:
        return env
    repo = os.path.dirname(os.path.dirname(PYROOT))
    for build in sorted(os.listdir(repo)):
        path = os.path.join(repo, build, "daemon", "braked")
        if build.startswith("build") and os.access(path, os.X_OK):
            return path
    return shutil.which("braked") or ""


# Found at import, so that a path argument is gone before unittest.main()
# parses the command line.
BRAKED = _find_braked()


class Daemon:
    """A braked on a temporary socket and database."""

    def __init__(self, directory: str):
        self.dir = directory
        self.sock = os.path.join(directory, "braked.sock")
        self.db = os.path.join(directory, "brake.db")
        self.proc = None

    def start(self) -> "Daemon":
        log = open(os.path.join(self.dir, "braked.log"), "ab")
        self.proc = subprocess.Popen(
            [BRAKED, "--socket", self.sock, "--db", self.db],
            stdout=log, stderr=log, stdin=subprocess.DEVNULL)
        log.close()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("braked exited: " + self.log())
            try:
                with socket.socket(socket.AF_UNIX) as s:
                    s.settimeout(1)
                    s.connect(self.sock)
                    s.sendall(b'{"op":"ping"}\n')
                    if b'"ok":true' in s.recv(4096):
                        return self
            except OSError:
                pass
            time.sleep(0.01)
        raise RuntimeError("braked did not start: " + self.log())

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def log(self) -> str:
        try:
            with open(os.path.join(self.dir, "braked.log")) as f:
                return f.read()[-2000:]
        except OSError:
            return ""


class FakeServer:
    """A Unix socket server whose n-th connection runs handlers[n](conn)."""

    def __init__(self, directory: str, handlers):
        self.path = os.path.join(directory, "fake-%d.sock" % id(self))
        self.handlers = list(handlers)
        self.lines = []
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.bind(self.path)
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.stopping = False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        n = 0
        while not self.stopping:
            try:
                conn, _ = self.sock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            handler = self.handlers[min(n, len(self.handlers) - 1)]
            n += 1
            threading.Thread(target=self._serve, args=(conn, handler),
                             daemon=True).start()

    def _serve(self, conn, handler) -> None:
        with conn:
            handler(self, conn, conn.makefile("rb"))

    def read(self, f):
        line = f.readline()
        if line:
            self.lines.append(json.loads(line))
            return self.lines[-1]
        return None

    def close(self) -> None:
        self.stopping = True
        self.sock.close()
        self.thread.join(2)



# The shared braked and the scratch directory of the run, set by
# set_up_module(); read them as client_harness.daemon and client_harness.tmp.
daemon = None
tmp = None
_names = iter(range(1, 1 << 30))


def set_up_module() -> None:
    global daemon, tmp
    if not BRAKED or not os.access(BRAKED, os.X_OK):
        raise unittest.SkipTest("no braked: set BRAKED or pass its path")
    tmp = tempfile.mkdtemp(prefix="brake-py-")
    daemon = Daemon(os.path.join(tmp, "main"))
    os.mkdir(daemon.dir)
    daemon.start()


def tear_down_module() -> None:
    if daemon:
        daemon.stop()
    if tmp:
        shutil.rmtree(tmp, ignore_errors=True)


def name(prefix: str) -> str:
    return "%s-%d" % (prefix, next(_names))

