"""Exceptions raised by the brake client.

    Error                   base of everything below
    +-- Denied              the daemon answered "granted": false (not an error
    |   |                   on the wire: a normal answer to acquire); one
    |   |                   subclass per reason:
    |   +-- RateLimited, QuotaExhausted, CostCap, BreakerOpen,
    |       ConcurrencyLimited, QueueFull, WaitTimedOut, TooLarge
    +-- BrakeError          "ok": false, or the daemon could not be asked
        +-- BadJson, BadRequest, UnknownOp, LineTooLong, UnknownLease,
        |   Forbidden, Internal, TooManyConnections (one per error code)
        +-- Unavailable     the daemon answered "unavailable" (its storage
            |               failed and it is configured to fail closed) ...
            +-- Unreachable ... or could not be reached at all: no socket,
                            connection refused or lost, no answer in time
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Type


class Error(Exception):
    """Base class of every exception this package raises."""


class Denied(Error):
    """An acquire that the daemon refused.

    Attributes mirror the reply: ``reason`` (``rate_limited``,
    ``quota_exhausted``, ``cost_cap``, ``breaker_open``, ``concurrency``,
    ``queue_full``, ``timeout``, ``too_large``, ``reserved``), ``scope``
    (``user:alice``),
    ``limit`` (the limit's name, ``"breaker"`` for breakers), ``cause`` (for
    ``breaker_open``: ``loop``, ``slow_calls``, ``errors``, ``spend_velocity``,
    ``throttled`` or ``manual``; else None), ``retry_after_ms`` (int, or None
    when the request can never be granted) and ``reply`` (the raw reply dict).
    """

    def __init__(self, reply: Dict[str, Any]):
        self.reply = reply
        self.reason: Optional[str] = reply.get("reason")
        self.scope: Optional[str] = reply.get("scope")
        self.limit: Optional[str] = reply.get("limit")
        self.cause: Optional[str] = reply.get("cause")
        self.retry_after_ms: Optional[int] = reply.get("retry_after_ms")
        text = "denied: %s" % self.reason
        if self.cause:
            text += " (%s)" % self.cause
        if self.scope:
            text += " by %s" % self.scope
            if self.limit:
                text += "/%s" % self.limit
        if self.retry_after_ms is None:
            text += ", can never be granted"
        else:
            text += ", retry after %d ms" % self.retry_after_ms
        super().__init__(text)

    @property
    def retry_after(self) -> Optional[float]:
        """``retry_after_ms`` in seconds (for ``time.sleep``), or None."""
        if self.retry_after_ms is None:
            return None
        return self.retry_after_ms / 1000.0


class RateLimited(Denied):
    """``rate_limited``: a rate limit (token bucket, warm-up, sliding log,
    fixed window, leaky bucket) refused; ``retry_after_ms`` says when it
    admits again."""


class QuotaExhausted(Denied):
    """``quota_exhausted``: a period quota of requests or tokens is used up
    until the period resets (``retry_after_ms``)."""


class CostCap(Denied):
    """``cost_cap``: the call's reserved usd would pass a usd quota, even if
    every call in flight settled for nothing: the cap is spent until the
    period resets (``retry_after_ms``)."""


class Reserved(Denied):
    """``reserved``: a quota or cost cap is held by calls in flight, not
    spent: the request fits once they settle for less than they reserved.
    ``held`` is what they hold (in the limit's resource) and
    ``retry_after_ms`` a hint; an acquire with ``wait_ms`` waits for the
    settlements instead of raising this."""

    def __init__(self, reply: Dict[str, Any]):
        super().__init__(reply)
        self.held: Optional[float] = reply.get("held")


class BreakerOpen(Denied):
    """``breaker_open``: a circuit breaker of the task, user or resource is
    open; ``cause`` says why (``loop``, ``slow_calls``, ``errors``,
    ``spend_velocity``, ``throttled``, ``manual``)."""


class ConcurrencyLimited(Denied):
    """``concurrency``: the scope already holds its maximum of open leases."""


class QueueFull(Denied):
    """``queue_full``: the scope's wait queue (or leaky bucket) is full."""


class WaitTimedOut(Denied):
    """``timeout``: the acquire waited its ``wait_ms`` without a grant."""


class TooLarge(Denied):
    """``too_large``: the request exceeds a limit's capacity and can never be
    granted (``retry_after_ms`` is None)."""


_DENIED_BY_REASON: Dict[str, Type[Denied]] = {
    "rate_limited": RateLimited, "quota_exhausted": QuotaExhausted,
    "cost_cap": CostCap, "breaker_open": BreakerOpen,
    "concurrency": ConcurrencyLimited, "queue_full": QueueFull,
    "timeout": WaitTimedOut, "too_large": TooLarge, "reserved": Reserved}


def denied_from_reply(reply: Dict[str, Any]) -> Denied:
    """The :class:`Denied` subclass of a ``"granted": false`` reply (an
    unknown reason: Denied itself)."""
    return _DENIED_BY_REASON.get(str(reply.get("reason")), Denied)(reply)


class BrakeError(Error):
    """The daemon answered ``"ok": false``, or could not be asked.

    ``code`` is the protocol's error code (``bad_request``, ``forbidden``,
    ...; ``unreachable`` for a daemon that could not be asked), ``message``
    the daemon's message (it names the offending field), ``reply`` the raw
    reply dict (None when there was none).
    """

    code: str = "internal"

    def __init__(self, message: str, code: Optional[str] = None,
                 reply: Optional[Dict[str, Any]] = None):
        if code is not None:
            self.code = code
        self.message = message
        self.reply = reply
        super().__init__("%s: %s" % (self.code, message))


class BadJson(BrakeError):
    code = "bad_json"


class BadRequest(BrakeError):
    code = "bad_request"


class UnknownOp(BrakeError):
    code = "unknown_op"


class LineTooLong(BrakeError):
    code = "line_too_long"


class UnknownLease(BrakeError):
    code = "unknown_lease"


class Forbidden(BrakeError):
    code = "forbidden"


class Internal(BrakeError):
    code = "internal"


class TooManyConnections(BrakeError):
    code = "too_many_connections"


class Unavailable(BrakeError):
    """The daemon answered ``unavailable`` (storage failed, fail closed)."""

    code = "unavailable"


class Unreachable(Unavailable):
    """The daemon could not be asked: no socket, refused, lost or too slow.

    ``sent`` tells whether the request may have reached the daemon (bytes
    were written before the connection broke or the answer timed out): an
    acquire with ``sent`` True may have been granted, and its lease will be
    settled at its estimate when the lease TTL runs out.
    """

    code = "unreachable"

    def __init__(self, message: str, sent: bool = False):
        self.sent = sent
        super().__init__(message)


_BY_CODE: Dict[str, Type[BrakeError]] = {cls.code: cls for cls in (
    BadJson, BadRequest, UnknownOp, LineTooLong, UnknownLease, Forbidden,
    Internal, TooManyConnections, Unavailable)}


def error_from_reply(reply: Dict[str, Any]) -> BrakeError:
    """The exception for an ``"ok": false`` reply (unknown codes: BrakeError)."""
    err = reply.get("error") or {}
    code = str(err.get("code", "internal"))
    message = str(err.get("message", ""))
    cls = _BY_CODE.get(code, BrakeError)
    return cls(message, code=code, reply=reply)
