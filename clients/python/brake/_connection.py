"""One connection to braked: a socket and its read buffer (client.py's).

Private to the package: Client keeps a pool of these, one request at a time
on each.
"""

from __future__ import annotations

import json
import os
import select
import socket
import time
from typing import Any, Dict

from .errors import Unreachable


class _Broken(Exception):
    """The connection failed; ``sent``: bytes of the request were written."""

    def __init__(self, sent: bool, cause: BaseException):
        super().__init__(str(cause))
        self.sent = sent
        self.cause = cause


class _TimedOut(Exception):
    def __init__(self, sent: bool):
        super().__init__("timed out")
        self.sent = sent


class _BadReply(Exception):
    pass


class _Connection:
    """One socket and its read buffer; used by one request at a time."""

    def __init__(self, path: str, timeout: float):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(timeout)
            sock.connect(path)
        except OSError as e:
            sock.close()
            reason = e.strerror or str(e) or type(e).__name__
            raise Unreachable("cannot connect to braked at %s: %s"
                              % (path, reason)) from e
        self.sock = sock
        self.buf = bytearray()
        self.pid = os.getpid()

    def idle_ok(self) -> bool:
        """False if the daemon closed this idle connection (or sent junk)."""
        if self.buf:
            return False
        try:
            poller = select.poll()
            poller.register(self.sock, select.POLLIN)
            return not poller.poll(0)
        except (OSError, ValueError):
            return False

    def send(self, data: bytes, timeout: float) -> None:
        view = memoryview(data)
        sent = 0
        try:
            self.sock.settimeout(timeout)
            while sent < len(view):
                sent += self.sock.send(view[sent:])
        except socket.timeout:
            raise _TimedOut(sent > 0)
        except OSError as e:
            # braked may have said why before closing (too_many_connections):
            # then read_reply reports that instead of a bare broken pipe.
            if self._said_why():
                return
            raise _Broken(sent > 0, e)

    def _said_why(self) -> bool:
        try:
            while True:
                chunk = self.sock.recv(65536, socket.MSG_DONTWAIT)
                if not chunk:
                    break
                self.buf += chunk
        except OSError:
            pass
        return b"\n" in self.buf

    def read_reply(self, rid: int, deadline: float) -> Dict[str, Any]:
        while True:
            nl = self.buf.find(b"\n")
            if nl >= 0:
                line = bytes(self.buf[:nl]).strip()
                del self.buf[:nl + 1]
                if not line:
                    continue
                try:
                    reply = json.loads(line)
                except ValueError:
                    raise _BadReply("not JSON: %r" % line[:200])
                if not isinstance(reply, dict):
                    raise _BadReply("not an object: %r" % line[:200])
                if reply.get("id") == rid:
                    return reply
                if "id" not in reply and reply.get("ok") is False:
                    # An error about the connection itself (line_too_long,
                    # too_many_connections): it answers our request too.
                    return reply
                continue  # a late reply to an abandoned request
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise _TimedOut(True)
            try:
                self.sock.settimeout(remaining)
                chunk = self.sock.recv(65536)
            except socket.timeout:
                raise _TimedOut(True)
            except OSError as e:
                raise _Broken(True, e)
            if not chunk:
                raise _Broken(True, EOFError("braked closed the connection"))
            self.buf += chunk

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass
