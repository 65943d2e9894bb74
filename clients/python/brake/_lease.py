"""What a lease is, whichever client granted it (client.py's and aio.py's).

Private to the package: :class:`Lease` and :class:`AsyncLease` add the
calls that settle it.
"""

from __future__ import annotations

import inspect
import json
import logging
import time
from typing import Any, Callable, Dict, Optional

from .errors import Unreachable, denied_from_reply
from .fingerprint import fingerprint
from .usage import UsageTally

log = logging.getLogger("brake")

# commit's outcomes (PROTOCOL.md).
OUTCOMES = ("ok", "error", "timeout", "throttled")


class LeaseBase:
    """A granted acquire's state; see :class:`brake.Lease`."""

    def __init__(self, reply: Optional[Dict[str, Any]],
                 error: Optional[BaseException] = None) -> None:
        self.reply: Dict[str, Any] = reply or {}
        self.id: Optional[str] = self.reply.get("lease")
        self.waited_ms: int = self.reply.get("waited_ms", 0)
        self.remaining: Optional[Dict[str, Any]] = self.reply.get("remaining")
        self.fail_open = reply is None
        self.error = error
        self.started = time.monotonic()
        self.settled: Optional[str] = None
        self.result: Optional[Dict[str, Any]] = None
        # What report() was told, for the commit of a block that raises.
        self.reported: Dict[str, int] = {}
        self.tally = UsageTally()

    def __repr__(self) -> str:
        name = type(self).__name__
        if self.fail_open:
            return "<brake.%s fail_open>" % name
        return "<brake.%s %s%s>" % (
            name, self.id, " " + self.settled if self.settled else "")

    def report(self, tokens: Optional[int] = None,
               input_tokens: Optional[int] = None,
               output_tokens: Optional[int] = None) -> None:
        """Notes the usage known so far, without settling: if the ``with``
        block then raises, the lease is committed with these figures
        (``outcome: "error"``) instead of the reserved estimate. Later calls
        replace the figures they name."""
        for key, value in (("tokens", tokens), ("input_tokens", input_tokens),
                           ("output_tokens", output_tokens)):
            if value is not None:
                self.reported[key] = value

    def observe(self, chunk: Any) -> Any:
        """Takes one stream chunk or event (OpenAI, Responses API,
        Anthropic) and returns it: its usage is tallied, reported (see
        :meth:`report`) and settled by ``commit_usage()`` with no argument.

        ``for chunk in stream: lease.observe(chunk); ...``
        """
        self.tally.add(chunk)
        if self.tally.input_tokens is not None:
            self.reported["input_tokens"] = self.tally.input_tokens
        if self.tally.output_tokens is not None:
            self.reported["output_tokens"] = self.tally.output_tokens
        return chunk

    def _usage_fields(self, response: Any) -> Dict[str, Any]:
        """commit's fields for commit_usage(response)."""
        if response is None:
            tally = self.tally
        elif isinstance(response, UsageTally):
            tally = response
        elif isinstance(response, (list, tuple)):
            tally = UsageTally(response)
        else:
            tally = UsageTally((response,))
        if tally.usage is None:
            # Nothing reported: the daemon charges the reservation, and the
            # ledger says it was an estimate.
            return {"usage": "estimated"}
        return {"input_tokens": tally.usage.input_tokens,
                "output_tokens": tally.usage.output_tokens,
                "usage": "reported" if tally.complete else "estimated"}

    def _commit_fields(self, tokens: Optional[int],
                       input_tokens: Optional[int],
                       output_tokens: Optional[int],
                       latency_ms: Optional[int], outcome: str,
                       retry_after_ms: Optional[int],
                       usage: Optional[str]) -> Dict[str, Any]:
        """commit's request fields (None ones are left out)."""
        if outcome not in OUTCOMES:
            raise ValueError("outcome: one of %s, not %r"
                             % (", ".join(OUTCOMES), outcome))
        if latency_ms is None:
            latency_ms = int(round((time.monotonic() - self.started) * 1000))
        return {"lease": self.id, "tokens": tokens,
                "input_tokens": input_tokens, "output_tokens": output_tokens,
                "latency_ms": latency_ms, "outcome": outcome,
                "retry_after_ms": retry_after_ms, "usage": usage}

    def _settled(self, settled: str, reply: Dict[str, Any]) -> Dict[str, Any]:
        self.settled = settled
        self.result = reply
        return reply

    def _fail_open_result(self, settled: str) -> Dict[str, Any]:
        return self._settled(settled, {"ok": True, "fail_open": True})

    def _unreachable(self, op: str, e: Unreachable,
                     fail_open: bool) -> Dict[str, Any]:
        if not fail_open:
            raise e
        log.warning("brake: %s of lease %s failed (%s); fail_open: going on "
                    "(the daemon settles it at its estimate after the lease "
                    "TTL)", op, self.id, e)
        return {"ok": False, "fail_open": True,
                "error": {"code": e.code, "message": e.message}}



def _jsonable(value: Any) -> Any:
    """``value`` as JSON can hold it; what it cannot, as its repr."""
    try:
        json.dumps(value, allow_nan=False)
        return value
    except (TypeError, ValueError):
        pass
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return repr(value)


def call_fingerprint(name: str, func: Callable[..., Any], args: Any,
                     kwargs: Any) -> str:
    """The fingerprint of one call of ``func``: its name and its arguments
    as bound to its parameters (``f(1)`` and ``f(x=1)`` are the same call)."""
    try:
        bound = inspect.signature(func).bind(*args, **kwargs)
        bound.apply_defaults()
        arguments: Any = dict(bound.arguments)
    except (TypeError, ValueError):
        arguments = {"args": list(args), "kwargs": dict(kwargs)}
    return fingerprint(name, _jsonable(arguments))


def acquire_fields(user: str, task: str, tokens: int, requests: int,
                   model: Optional[str], resource: Optional[str],
                   fingerprint: Optional[str], parent: Optional[str],
                   wait_ms: int) -> Dict[str, Any]:
    """acquire's request fields (None ones are left out)."""
    return {"user": user, "task": task, "tokens": tokens,
            "requests": requests, "model": model, "resource": resource,
            "fingerprint": fingerprint, "parent": parent,
            "wait_ms": wait_ms if wait_ms else None}


def fail_open_or_raise(fail_open: bool, e: Unreachable) -> None:
    """An acquire that could not be asked: raises, unless fail_open."""
    if not fail_open:
        raise e
    log.warning("brake: %s; fail_open: going ahead without a lease", e)


def granted(reply: Dict[str, Any]) -> Dict[str, Any]:
    """An acquire's reply if granted; else raises its Denied subclass."""
    if reply.get("granted") is True:
        return reply
    raise denied_from_reply(reply)


def log_lost_commit(lease: LeaseBase, cause: BaseException,
                    failed: BaseException) -> None:
    """A commit after a failure failed too: logged, never raised over it."""
    log.warning("brake: could not commit lease %s after %s: %s", lease.id,
                type(cause).__name__, failed)
