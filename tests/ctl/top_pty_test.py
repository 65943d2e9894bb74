#!/usr/bin/env python3
"""brakectl top under a real terminal (a pty): it draws, refreshes, shows
the busiest users and tasks, and quits on 'q' with exit 0, restoring the
terminal. Run by ctest with BRAKED and BRAKECTL set to the built binaries."""
import json
import os
import pty
import select
import signal
import socket
import subprocess
import sys
import tempfile
import time


def read_until(fd, needle, timeout):
    out = b""
    deadline = time.time() + timeout
    while time.time() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.1)
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
            if out.count(needle) >= 2:
                return out
    return out


def main():
    braked, brakectl = os.environ["BRAKED"], os.environ["BRAKECTL"]
    with tempfile.TemporaryDirectory() as d:
        sock = os.path.join(d, "s")
        daemon = subprocess.Popen([braked, "--socket", sock, "--db",
                                   os.path.join(d, "db")],
                                  stderr=subprocess.DEVNULL)
        try:
            for _ in range(500):
                try:
                    socket.socket(socket.AF_UNIX).connect(sock)
                    break
                except OSError:
                    time.sleep(0.01)
            # Some traffic, so the busiest users section has a row.
            with socket.socket(socket.AF_UNIX) as s:
                s.connect(sock)
                f = s.makefile("rw")
                for _ in range(3):
                    f.write(json.dumps({"op": "acquire", "user": "pty-alice",
                                        "task": "pty-t1"}) + "\n")
                    f.flush()
                    assert json.loads(f.readline())["granted"] is True
            pid, fd = pty.fork()
            if pid == 0:
                os.execv(brakectl, [brakectl, "--socket", sock, "top",
                                    "--interval-ms", "200"])
            # Two frames drawn: the header twice, with the clear/home escape.
            out = read_until(fd, b"brake top", 10)
            assert out.count(b"brake top") >= 2, out[-2000:]
            assert b"\x1b[" in out, "no terminal escapes in a pty"
            assert b"granted" in out
            assert b"BUSIEST USERS" in out, out[-2000:]
            assert b"pty-alice" in out, out[-2000:]
            assert b"BUSIEST TASKS" in out and b"pty-t1" in out, out[-2000:]
            os.write(fd, b"q")
            deadline = time.time() + 5
            status = None
            while time.time() < deadline:
                wpid, status = os.waitpid(pid, os.WNOHANG)
                if wpid == pid:
                    break
                read_until(fd, b"\0", 0.1)
            else:
                os.kill(pid, signal.SIGKILL)
                raise AssertionError("brakectl top did not quit on 'q'")
            assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
        finally:
            daemon.terminate()
            daemon.wait(timeout=10)
    print("brakectl top in a pty: ok")


if __name__ == "__main__":
    sys.exit(main())
