"""The brake client: asks braked "may I?" over its Unix socket.

Wire format: one JSON object per line (see PROTOCOL.md). Every request gets a
fresh integer ``id`` and a reply is matched to its request by that id.

Concurrency: a Client keeps a small pool of connections. A request takes an
idle connection (or opens one), sends one line, reads until the reply with its
id and puts the connection back. One connection therefore carries one request
at a time, so threads never wait on each other's replies (a waiting acquire
holds its own connection while it waits), and no background thread is needed.
"""

from __future__ import annotations

import functools
import inspect
import itertools
import json
import logging
import os
import threading
import time
from typing import Any, Callable, Dict, List, Optional, TypeVar

from ._connection import _BadReply, _Broken, _Connection, _TimedOut
from ._lease import (LeaseBase, acquire_fields, call_fingerprint,
                     fail_open_or_raise, granted, log_lost_commit)
from .errors import BrakeError, Error, Unreachable, error_from_reply
from .usage import usage_of

R = TypeVar("R")

log = logging.getLogger("brake")

# Ops sent again after a broken connection even when the first attempt may
# have reached the daemon: reads, and writes whose repetition changes nothing
# (commit and cancel answer a repeat with "duplicate": true; policy.set,
# policy.delete, prices.set and breaker.reset set a state). acquire, reset and
# breaker.trip are sent again only when not a byte of them was written.
RETRY_AFTER_SEND = frozenset({
    "ping", "status", "usage", "metrics", "policy.get", "policy.list",
    "breaker.list", "commit", "cancel", "policy.set", "policy.delete",
    "prices.set", "breaker.reset"})

# Error codes after which the daemon closes the connection.
_CLOSING_CODES = frozenset({"line_too_long", "too_many_connections"})


def default_socket_path() -> str:
    """The socket braked listens on by default, as the daemon computes it.

    ``BRAKE_SOCKET`` if set; else ``$XDG_RUNTIME_DIR/brake/braked.sock`` when
    XDG_RUNTIME_DIR is set and non-empty; else ``/tmp/brake-$UID/braked.sock``.
    """
    env = os.environ.get("BRAKE_SOCKET")
    if env:
        return env
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg:
        return os.path.join(xdg, "brake", "braked.sock")
    return "/tmp/brake-%d/braked.sock" % os.getuid()



class Client:
    """A thread-safe connection to braked.

    ``socket_path``: defaults to :func:`default_socket_path`.
    ``timeout``: seconds to wait for a connection and for each answer (a
    waiting acquire gets its ``wait_ms`` on top).
    ``fail_open``: when the daemon cannot be reached, :meth:`acquire` returns
    a no-op :class:`Lease` (``lease.fail_open`` is True) instead of raising
    :class:`Unreachable`, and commit/cancel of a lease log a warning instead of
    raising. The agent keeps working while brake is down, but nothing is
    limited or counted meanwhile: use it only where an outage of the agent is
    worse than unmetered spend. A daemon that answers ``unavailable`` on
    purpose (storage failed and it fails closed) is never overridden.
    ``pool_size``: idle connections kept for reuse.
    """

    def __init__(self, socket_path: Optional[str] = None,
                 timeout: float = 10.0, fail_open: bool = False,
                 pool_size: int = 8):
        self.socket_path = socket_path or default_socket_path()
        self.timeout = float(timeout)
        self.fail_open = bool(fail_open)
        self.pool_size = int(pool_size)
        self._lock = threading.Lock()
        self._idle: List[_Connection] = []
        self._ids = itertools.count(1)
        self._pid = os.getpid()
        self._closed = False

    # ---- connections -----------------------------------------------------

    def _checkout(self) -> _Connection:
        with self._lock:
            if self._closed:
                raise Error("brake client is closed")
            if self._pid != os.getpid():
                # A forked child must not share its parent's sockets.
                for conn in self._idle:
                    conn.close()
                self._idle = []
                self._pid = os.getpid()
            while self._idle:
                conn = self._idle.pop()
                if conn.idle_ok():
                    return conn
                conn.close()  # the daemon went away (restart): reconnect
        return _Connection(self.socket_path, self.timeout)

    def _checkin(self, conn: _Connection) -> None:
        with self._lock:
            if (not self._closed and conn.pid == self._pid
                    and len(self._idle) < self.pool_size):
                self._idle.append(conn)
                return
        conn.close()

    def close(self) -> None:
        """Closes the idle connections; the Client cannot be used after."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # ---- requests --------------------------------------------------------

    def request(self, op: str, extra_timeout: float = 0.0,
                **fields: Any) -> Dict[str, Any]:
        """Sends one request and returns the daemon's reply as a dict.

        Fields whose value is None are left out. Raises the
        :class:`BrakeError` subclass of an ``"ok": false`` reply and
        :class:`Unreachable` when the daemon cannot be asked. A broken
        connection (daemon restarted) is reopened once and the request sent
        again if no byte of it was written, or if ``op`` is in
        ``RETRY_AFTER_SEND``.
        """
        reply = self._exchange(op, fields, extra_timeout)
        if reply.get("ok") is not True:
            raise error_from_reply(reply)
        return reply

    def _exchange(self, op: str, fields: Dict[str, Any],
                  extra_timeout: float) -> Dict[str, Any]:
        req: Dict[str, Any] = {"op": op}
        for key, value in fields.items():
            if value is not None:
                req[key] = value
        sent_before = False
        for attempt in (0, 1):
            rid = next(self._ids)  # atomic under the GIL
            req["id"] = rid
            data = json.dumps(req, separators=(",", ":"),
                              ensure_ascii=False).encode("utf-8") + b"\n"
            try:
                conn = self._checkout()
            except Unreachable as e:
                e.sent = sent_before
                raise
            try:
                conn.send(data, self.timeout)
                reply = conn.read_reply(
                    rid, time.monotonic() + self.timeout + extra_timeout)
            except _Broken as b:
                conn.close()
                sent_before = sent_before or b.sent
                if attempt == 0 and (not b.sent or op in RETRY_AFTER_SEND):
                    log.debug("brake: connection broken (%s); reconnecting "
                              "and sending %s again", b, op)
                    continue
                if b.sent and op not in RETRY_AFTER_SEND:
                    raise Unreachable(
                        "connection to braked lost after %s was sent (%s); "
                        "not sent again: it may have been applied" % (op, b),
                        sent=True) from b.cause
                raise Unreachable("connection to braked lost (%s)" % b,
                                  sent=sent_before) from b.cause
            except _TimedOut as t:
                conn.close()
                raise Unreachable(
                    "no answer from braked within %.1f s to %s"
                    % (self.timeout + extra_timeout, op),
                    sent=sent_before or t.sent) from None
            except _BadReply as e:
                conn.close()
                raise BrakeError("unreadable reply from braked: %s" % e,
                                 code="bad_reply") from None
            except BaseException:
                conn.close()  # e.g. KeyboardInterrupt mid-request
                raise
            err = reply.get("error") if reply.get("ok") is False else None
            if "id" not in reply or (isinstance(err, dict)
                                     and err.get("code") in _CLOSING_CODES):
                conn.close()
            else:
                self._checkin(conn)
            return reply
        raise AssertionError("unreachable")  # pragma: no cover

    # ---- the hot path ----------------------------------------------------

    def acquire(self, user: str, task: str, tokens: int = 0,
                requests: int = 1, model: Optional[str] = None,
                resource: Optional[str] = None,
                fingerprint: Optional[str] = None,
                parent: Optional[str] = None, wait_ms: int = 0) -> "Lease":
        """Asks to make one call; returns a :class:`Lease` or raises
        :class:`Denied`.

        ``tokens``: estimated LLM tokens to reserve. ``model``: prices the
        reservation (the model needs a price: :meth:`prices_set`).
        ``fingerprint``: e.g. :func:`brake.fingerprint` of a tool call; the
        same fingerprint repeated in a task trips a loop breaker.
        ``parent``: on a task's first acquire, the task whose caps also cover
        it. ``wait_ms`` > 0: the daemon queues the request up to that long
        instead of denying at once.

        An acquire is never sent twice: if the connection breaks after it was
        written, it raises :class:`Unreachable` with ``sent`` True (or, with
        ``fail_open``, returns a no-op lease).
        """
        fields = acquire_fields(user, task, tokens, requests, model,
                                resource, fingerprint, parent, wait_ms)
        try:
            reply = self.request("acquire", extra_timeout=wait_ms / 1000.0,
                                 **fields)
        except Unreachable as e:
            fail_open_or_raise(self.fail_open, e)
            return Lease(self, None, error=e)
        return Lease(self, granted(reply))

    def guard(self, user: str, task: str, resource: Optional[str] = None,
              tokens: int = 0, model: Optional[str] = None,
              wait_ms: int = 0, name: Optional[str] = None
              ) -> Callable[[Callable[..., R]], Callable[..., R]]:
        """A decorator for a tool (a plain function; for ``async def`` use
        :meth:`AsyncClient.guard`): each call acquires first (raising the
        :class:`Denied` subclass when refused), with a fingerprint of the
        call's name (``name`` or the function's qualified name) and its
        arguments, so that a loop of identical calls trips the loop breaker;
        then commits the outcome (``error`` when the tool raises) and the
        latency, and the tokens when the result is a response with usage.
        """
        def decorate(func: Callable[..., R]) -> Callable[..., R]:
            if inspect.iscoroutinefunction(func):
                raise TypeError("Client.guard wraps plain functions; use "
                                "AsyncClient.guard for async def %s"
                                % func.__qualname__)
            call_name = name or func.__qualname__

            @functools.wraps(func)
            def guarded(*args: Any, **kwargs: Any) -> R:
                lease = self.acquire(
                    user, task, tokens=tokens, model=model,
                    resource=resource, wait_ms=wait_ms,
                    fingerprint=call_fingerprint(call_name, func, args,
                                                 kwargs))
                try:
                    result = func(*args, **kwargs)
                except BaseException as e:
                    try:
                        lease.commit(outcome="error")
                    except Error as failed:  # never hide the tool's own
                        log_lost_commit(lease, e, failed)
                    raise
                if usage_of(result) is not None:
                    lease.commit_usage(result)
                else:
                    lease.commit()
                return result
            return guarded
        return decorate

    # ---- reads -----------------------------------------------------------

    def ping(self) -> Dict[str, Any]:
        """``{"ok": true, "version": "x.y.z"}``."""
        return self.request("ping")

    def status(self, user: Optional[str] = None, task: Optional[str] = None,
               resource: Optional[str] = None) -> Dict[str, Any]:
        """Limits, spend, reservations, breakers of one user, task or
        resource (give exactly one)."""
        return self.request("status", user=user, task=task,
                            resource=resource)

    def usage(self, user: str, task: Optional[str] = None,
              since_ms: Optional[int] = None,
              by: Optional[str] = None) -> Dict[str, Any]:
        """Settled usage from the ledger: ``reply["rows"]``, grouped ``by``
        ``task`` (default), ``model``, ``day`` or ``total``."""
        return self.request("usage", user=user, task=task, since_ms=since_ms,
                            by=by)

    def metrics(self) -> str:
        """The Prometheus text exposition."""
        text: str = self.request("metrics")["text"]
        return text

    def breaker_list(self) -> Dict[str, Any]:
        """``reply["breakers"]``: every breaker that is not closed."""
        return self.request("breaker.list")

    # ---- admin (the daemon's own uid and its admin_uids) ------------------

    def policy_set(self, scope: str, limits: Optional[List[Dict[str, Any]]]
                   = None, breaker: Optional[Dict[str, Any]] = None
                   ) -> Dict[str, Any]:
        """Sets (replaces) the policy of ``scope`` (``global``,
        ``user:alice``, ``task:*``, ...); the reply echoes it canonically."""
        return self.request("policy.set", scope=scope, limits=limits,
                            breaker=breaker)

    def policy_get(self, scope: str) -> Dict[str, Any]:
        """``reply["policy"]``, None when the scope has none."""
        return self.request("policy.get", scope=scope)

    def policy_list(self) -> Dict[str, Any]:
        """``reply["policies"]``, sorted by scope."""
        return self.request("policy.list")

    def policy_delete(self, scope: str) -> Dict[str, Any]:
        """``reply["deleted"]``: whether there was one."""
        return self.request("policy.delete", scope=scope)

    def prices_set(self, model: str, input_usd_per_mtok: float,
                   output_usd_per_mtok: float) -> Dict[str, Any]:
        return self.request("prices.set", model=model,
                            input_usd_per_mtok=input_usd_per_mtok,
                            output_usd_per_mtok=output_usd_per_mtok)

    def reset(self, scope: str) -> Dict[str, Any]:
        """Clears the counters and spend of ``scope``."""
        return self.request("reset", scope=scope)

    def breaker_trip(self, scope: str,
                     open_ms: Optional[int] = None) -> Dict[str, Any]:
        """Opens ``scope``'s breaker by hand (cause ``manual``)."""
        return self.request("breaker.trip", scope=scope, open_ms=open_ms)

    def breaker_reset(self, scope: str) -> Dict[str, Any]:
        return self.request("breaker.reset", scope=scope)


class Lease(LeaseBase):
    """A granted acquire: commit it with the real usage, or cancel it.

    ``id``: the daemon's lease string (None for a fail-open lease).
    ``reply``: the acquire's reply; ``waited_ms``, ``remaining`` from it.
    ``fail_open``: True for the no-op lease :meth:`Client.acquire` returns
    when the daemon is unreachable and the client has ``fail_open``.
    ``settled``: None, ``"committed"`` or ``"cancelled"``.

    As a context manager: leaving the block without commit or cancel
    cancels the lease; an exception leaving the block commits it with
    outcome ``error`` (feeding the error breakers) and the usage reported or
    observed so far, and propagates.
    """

    def __init__(self, client: Client, reply: Optional[Dict[str, Any]],
                 error: Optional[BaseException] = None):
        super().__init__(reply, error)
        self._client = client

    def commit(self, tokens: Optional[int] = None,
               input_tokens: Optional[int] = None,
               output_tokens: Optional[int] = None,
               latency_ms: Optional[int] = None, outcome: str = "ok",
               retry_after_ms: Optional[int] = None,
               usage: Optional[str] = None) -> Dict[str, Any]:
        """Settles the lease with the real usage; returns the reply
        (``charged_tokens``, ``charged_usd``, ``duplicate`` on a repeat).

        Without ``tokens`` the daemon charges ``input_tokens +
        output_tokens``, or the reserved estimate when neither is given.
        ``latency_ms`` defaults to the time since the grant. ``outcome``:
        ``ok``, ``error``, ``timeout`` or ``throttled`` (the downstream said
        "wait"; ``retry_after_ms`` holds its breaker open that long).
        ``usage``: ``reported`` (default) or ``estimated``, as the ledger
        records it. Committing again is harmless (the first result,
        ``duplicate``).
        """
        fields = self._commit_fields(tokens, input_tokens, output_tokens,
                                     latency_ms, outcome, retry_after_ms,
                                     usage)
        if self.fail_open:
            return self._fail_open_result("committed")
        try:
            reply = self._client.request("commit", **fields)
        except Unreachable as e:
            return self._unreachable("commit", e, self._client.fail_open)
        return self._settled("committed", reply)

    def commit_usage(self, response: Any = None, outcome: str = "ok",
                     latency_ms: Optional[int] = None) -> Dict[str, Any]:
        """Commits the tokens a response reports: an OpenAI chat/completions
        or Responses-API response, an Anthropic message, as the SDK's object
        or a dict; a stream's final usage chunk or event, or a list of its
        chunks/events; with no argument, what :meth:`observe` saw. A
        response that reports no usage settles at the reservation, recorded
        as estimated (as does a stream that reported one side only, for the
        side it left out)."""
        return self.commit(latency_ms=latency_ms, outcome=outcome,
                           **self._usage_fields(response))

    def cancel(self) -> Dict[str, Any]:
        """Releases the reservation as if the call never happened."""
        if self.fail_open:
            return self._fail_open_result("cancelled")
        try:
            reply = self._client.request("cancel", lease=self.id)
        except Unreachable as e:
            return self._unreachable("cancel", e, self._client.fail_open)
        return self._settled("cancelled", reply)

    def __enter__(self) -> "Lease":
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if self.settled is not None:
            return
        if exc_type is None:
            self.cancel()
            return
        # The call may have spent before it failed: settled with what was
        # reported, else at the reservation (a failed call is not free).
        try:
            r = self.reported
            self.commit(outcome="error", tokens=r.get("tokens"),
                        input_tokens=r.get("input_tokens"),
                        output_tokens=r.get("output_tokens"))
        except Error as e:  # never hide the block's own exception
            log.warning("brake: could not commit lease %s after %s: %s",
                        self.id, exc_type.__name__, e)
        return
