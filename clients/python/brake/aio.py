"""The brake client on asyncio: :class:`AsyncClient` and :class:`AsyncLease`.

One Unix-socket connection carries every request of a client, pipelined:
each gets a fresh integer ``id`` and a reader task hands each reply to the
request of its id. A waiting acquire (``wait_ms``) therefore holds nothing
but its own future: pings, commits and other acquires sent behind it are
answered while it waits. A connection that breaks fails the requests on it
(each sent again, on a new connection, under the sync client's rules), and
the next request reconnects.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import itertools
import json
import logging
from typing import (Any, Awaitable, Callable, Dict, List, Optional, Set,
                    TypeVar)

from ._lease import (LeaseBase, acquire_fields, call_fingerprint,
                     fail_open_or_raise, granted, log_lost_commit)
from .client import RETRY_AFTER_SEND, default_socket_path
from .errors import BrakeError, Error, Unreachable, error_from_reply
from .usage import usage_of

log = logging.getLogger("brake")

R = TypeVar("R")

# A reply line may be long (metrics, status of a wide policy).
_LINE_LIMIT = 16 * 1024 * 1024
_HIGH_WATER = 256 * 1024


class _Lost(Exception):
    """The connection broke while a request was on it."""


class _Connection:
    """One socket, its pending requests by id, and the task reading it."""

    def __init__(self, reader: asyncio.StreamReader,
                 writer: asyncio.StreamWriter,
                 on_abandoned_grant: Callable[[str], None]) -> None:
        self.reader = reader
        self.writer = writer
        self.pending: Dict[int, "asyncio.Future[Dict[str, Any]]"] = {}
        # Acquires whose caller gave up (timeout, cancelled): a grant that
        # comes for one after is cancelled at once, not left to its TTL.
        self.abandoned: Set[int] = set()
        self.closed = False
        self.draining = asyncio.Lock()
        self.on_abandoned_grant = on_abandoned_grant
        self.task = asyncio.get_running_loop().create_task(self._read())

    async def _read(self) -> None:
        why: BaseException = EOFError("braked closed the connection")
        try:
            while True:
                line = await self.reader.readline()
                if not line:
                    break
                if not line.strip():
                    continue
                try:
                    reply = json.loads(line)
                except ValueError:
                    why = BrakeError("unreadable reply from braked: %r"
                                     % line[:200], code="bad_reply")
                    break
                if not isinstance(reply, dict):
                    continue
                self._deliver(reply)
        except (OSError, ValueError, asyncio.IncompleteReadError) as e:
            why = e  # ValueError: a line over the limit
        finally:
            self._fail_all(why)

    def _deliver(self, reply: Dict[str, Any]) -> None:
        rid = reply.get("id")
        if not isinstance(rid, int) or isinstance(rid, bool):
            if reply.get("ok") is False:
                # An error about the connection itself (too_many_connections,
                # line_too_long): it answers every request on it.
                for waiting in self.pending.values():
                    if not waiting.done():
                        waiting.set_result(reply)
                self.pending.clear()
            return
        future = self.pending.pop(rid, None)
        if future is not None:
            if not future.done():
                future.set_result(reply)
            return
        if rid in self.abandoned:
            self.abandoned.discard(rid)
            self.cancel_if_granted(reply)

    def cancel_if_granted(self, reply: Dict[str, Any]) -> None:
        """A reply nobody awaits: a lease it grants is cancelled."""
        lease = reply.get("lease")
        if reply.get("granted") is True and isinstance(lease, str):
            self.on_abandoned_grant(lease)

    async def send(self, data: bytes) -> None:
        """Writes one request; waits only while the daemon is not reading
        (more than _HIGH_WATER bytes unsent), one writer at a time."""
        if self.closed:
            raise _Lost("connection closed")
        self.writer.write(data)
        if self.writer.transport.get_write_buffer_size() > _HIGH_WATER:
            async with self.draining:
                await self.writer.drain()

    def _fail_all(self, why: BaseException) -> None:
        self.closed = True
        for future in self.pending.values():
            if not future.done():
                future.set_exception(_Lost(str(why)))
        self.pending.clear()
        self.writer.close()

    def close(self) -> None:
        if not self.task.done():
            self.task.cancel()
        if not self.closed:
            self._fail_all(EOFError("client closed"))


class AsyncClient:
    """The brake client for asyncio; the sync :class:`Client`'s API, awaited.

    ``socket_path``, ``timeout`` and ``fail_open`` as for :class:`Client`.
    Use it from one event loop; ``async with AsyncClient() as client:``
    closes it on leaving.
    """

    def __init__(self, socket_path: Optional[str] = None,
                 timeout: float = 10.0, fail_open: bool = False) -> None:
        self.socket_path = socket_path or default_socket_path()
        self.timeout = float(timeout)
        self.fail_open = bool(fail_open)
        self._conn: Optional[_Connection] = None
        self._connecting: Optional[asyncio.Lock] = None
        self._ids = itertools.count(1)
        self._closed = False
        self._background: Set["asyncio.Task[Any]"] = set()

    # ---- the connection --------------------------------------------------

    async def _connection(self) -> _Connection:
        if self._closed:
            raise Error("brake client is closed")
        conn = self._conn
        if conn is not None and not conn.closed:
            return conn
        if self._connecting is None:
            self._connecting = asyncio.Lock()
        async with self._connecting:
            conn = self._conn
            if conn is not None and not conn.closed:
                return conn
            try:
                reader, writer = await asyncio.wait_for(
                    asyncio.open_unix_connection(self.socket_path,
                                                 limit=_LINE_LIMIT),
                    self.timeout)
            except asyncio.TimeoutError:
                raise Unreachable("cannot connect to braked at %s: timed out"
                                  % self.socket_path) from None
            except OSError as e:
                reason = e.strerror or str(e) or type(e).__name__
                raise Unreachable("cannot connect to braked at %s: %s"
                                  % (self.socket_path, reason)) from e
            self._conn = _Connection(reader, writer, self._cancel_abandoned)
            return self._conn

    def _cancel_abandoned(self, lease: str) -> None:
        task = asyncio.get_running_loop().create_task(self._quiet_cancel(lease))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _quiet_cancel(self, lease: str) -> None:
        try:
            await self.request("cancel", lease=lease)
        except Error as e:
            log.debug("brake: cancelling abandoned lease %s: %s", lease, e)

    async def close(self) -> None:
        """Closes the connection; the client cannot be used after."""
        self._closed = True
        if self._background:
            await asyncio.gather(*self._background, return_exceptions=True)
        if self._conn is not None:
            self._conn.close()
            await asyncio.gather(self._conn.task, return_exceptions=True)
            self._conn = None

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    # ---- requests --------------------------------------------------------

    async def request(self, op: str, extra_timeout: float = 0.0,
                      **fields: Any) -> Dict[str, Any]:
        """Sends one request and returns the reply, as :meth:`Client.request`
        does (the same errors, the same rule for sending again)."""
        reply = await self._exchange(op, fields, extra_timeout)
        if reply.get("ok") is not True:
            raise error_from_reply(reply)
        return reply

    async def _exchange(self, op: str, fields: Dict[str, Any],
                        extra_timeout: float) -> Dict[str, Any]:
        req: Dict[str, Any] = {"op": op}
        for key, value in fields.items():
            if value is not None:
                req[key] = value
        sent_before = False
        for attempt in (0, 1):
            try:
                conn = await self._connection()
            except Unreachable as e:
                e.sent = sent_before
                raise
            rid = next(self._ids)
            req["id"] = rid
            data = json.dumps(req, separators=(",", ":"),
                              ensure_ascii=False).encode("utf-8") + b"\n"
            future: "asyncio.Future[Dict[str, Any]]" = (
                asyncio.get_running_loop().create_future())
            conn.pending[rid] = future
            try:
                await conn.send(data)
                await asyncio.wait_for(asyncio.shield(future),
                                       self.timeout + extra_timeout)
            except _Lost as lost:
                sent_before = True
                if attempt == 0 and op in RETRY_AFTER_SEND:
                    log.debug("brake: connection lost (%s); reconnecting and "
                              "sending %s again", lost, op)
                    continue
                if op not in RETRY_AFTER_SEND:
                    raise Unreachable(
                        "connection to braked lost after %s was sent (%s); "
                        "not sent again: it may have been applied"
                        % (op, lost), sent=True) from None
                raise Unreachable("connection to braked lost (%s)" % lost,
                                  sent=True) from None
            except asyncio.TimeoutError:
                self._abandon(conn, rid, op, future)
                raise Unreachable(
                    "no answer from braked within %.1f s to %s"
                    % (self.timeout + extra_timeout, op), sent=True) from None
            except BaseException:  # cancelled: the reply is not awaited
                self._abandon(conn, rid, op, future)
                raise
            return future.result()
        raise AssertionError("unreachable")  # pragma: no cover

    @staticmethod
    def _abandon(conn: _Connection, rid: int, op: str,
                 future: "asyncio.Future[Dict[str, Any]]") -> None:
        """The caller stopped awaiting request `rid`: an acquire granted
        after (or just as) it gave up is cancelled on the daemon."""
        conn.pending.pop(rid, None)
        if not future.done():
            future.cancel()
            if op == "acquire":
                conn.abandoned.add(rid)
        elif (op == "acquire" and not future.cancelled()
              and future.exception() is None):
            conn.cancel_if_granted(future.result())  # came as we gave up

    # ---- the hot path ----------------------------------------------------

    async def acquire(self, user: str, task: str, tokens: int = 0,
                      requests: int = 1, model: Optional[str] = None,
                      resource: Optional[str] = None,
                      fingerprint: Optional[str] = None,
                      parent: Optional[str] = None,
                      wait_ms: int = 0) -> "AsyncLease":
        """:meth:`Client.acquire`, awaited: an :class:`AsyncLease`, or the
        :class:`Denied` subclass of the reason. While it waits (``wait_ms``)
        every other request of this client goes on. An acquire whose caller
        gives up (cancelled, or no answer in time) is cancelled on the daemon
        if it is granted after."""
        fields = acquire_fields(user, task, tokens, requests, model,
                                resource, fingerprint, parent, wait_ms)
        try:
            reply = await self.request(
                "acquire", extra_timeout=wait_ms / 1000.0, **fields)
        except Unreachable as e:
            fail_open_or_raise(self.fail_open, e)
            return AsyncLease(self, None, error=e)
        return AsyncLease(self, granted(reply))

    def guard(self, user: str, task: str, resource: Optional[str] = None,
              tokens: int = 0, model: Optional[str] = None,
              wait_ms: int = 0, name: Optional[str] = None
              ) -> Callable[[Callable[..., Awaitable[R]]],
                            Callable[..., Awaitable[R]]]:
        """:meth:`Client.guard` for ``async def`` tools."""
        def decorate(func: Callable[..., Awaitable[R]]
                     ) -> Callable[..., Awaitable[R]]:
            if not inspect.iscoroutinefunction(func):
                raise TypeError("AsyncClient.guard wraps async functions; "
                                "use Client.guard for %s"
                                % getattr(func, "__qualname__", func))
            call_name = name or func.__qualname__

            @functools.wraps(func)
            async def guarded(*args: Any, **kwargs: Any) -> R:
                lease = await self.acquire(
                    user, task, tokens=tokens, model=model,
                    resource=resource, wait_ms=wait_ms,
                    fingerprint=call_fingerprint(call_name, func, args,
                                                 kwargs))
                try:
                    result = await func(*args, **kwargs)
                except BaseException as e:
                    try:
                        await lease.commit(outcome="error")
                    except Error as failed:  # never hide the tool's own
                        log_lost_commit(lease, e, failed)
                    raise
                if usage_of(result) is not None:
                    await lease.commit_usage(result)
                else:
                    await lease.commit()
                return result
            return guarded
        return decorate

    # ---- reads -----------------------------------------------------------

    async def ping(self) -> Dict[str, Any]:
        return await self.request("ping")

    async def status(self, user: Optional[str] = None,
                     task: Optional[str] = None,
                     resource: Optional[str] = None) -> Dict[str, Any]:
        return await self.request("status", user=user, task=task,
                                  resource=resource)

    async def usage(self, user: str, task: Optional[str] = None,
                    since_ms: Optional[int] = None,
                    by: Optional[str] = None) -> Dict[str, Any]:
        return await self.request("usage", user=user, task=task,
                                  since_ms=since_ms, by=by)

    async def metrics(self) -> str:
        text: str = (await self.request("metrics"))["text"]
        return text

    async def breaker_list(self) -> Dict[str, Any]:
        return await self.request("breaker.list")

    # ---- admin -------------------------------------------------------------

    async def policy_set(self, scope: str,
                         limits: Optional[List[Dict[str, Any]]] = None,
                         breaker: Optional[Dict[str, Any]] = None
                         ) -> Dict[str, Any]:
        return await self.request("policy.set", scope=scope, limits=limits,
                                  breaker=breaker)

    async def policy_get(self, scope: str) -> Dict[str, Any]:
        return await self.request("policy.get", scope=scope)

    async def policy_list(self) -> Dict[str, Any]:
        return await self.request("policy.list")

    async def policy_delete(self, scope: str) -> Dict[str, Any]:
        return await self.request("policy.delete", scope=scope)

    async def prices_set(self, model: str, input_usd_per_mtok: float,
                         output_usd_per_mtok: float) -> Dict[str, Any]:
        return await self.request("prices.set", model=model,
                                  input_usd_per_mtok=input_usd_per_mtok,
                                  output_usd_per_mtok=output_usd_per_mtok)

    async def reset(self, scope: str) -> Dict[str, Any]:
        return await self.request("reset", scope=scope)

    async def breaker_trip(self, scope: str,
                           open_ms: Optional[int] = None) -> Dict[str, Any]:
        return await self.request("breaker.trip", scope=scope,
                                  open_ms=open_ms)

    async def breaker_reset(self, scope: str) -> Dict[str, Any]:
        return await self.request("breaker.reset", scope=scope)


class AsyncLease(LeaseBase):
    """:class:`Lease`, awaited: ``await lease.commit(...)``,
    ``await lease.commit_usage(resp)``, ``await lease.cancel()``; ``async
    with`` it as ``with`` a Lease (no settle: cancelled; an exception:
    committed as ``error`` with what was reported or observed)."""

    def __init__(self, client: AsyncClient, reply: Optional[Dict[str, Any]],
                 error: Optional[BaseException] = None) -> None:
        super().__init__(reply, error)
        self._client = client

    async def commit(self, tokens: Optional[int] = None,
                     input_tokens: Optional[int] = None,
                     output_tokens: Optional[int] = None,
                     latency_ms: Optional[int] = None, outcome: str = "ok",
                     retry_after_ms: Optional[int] = None,
                     usage: Optional[str] = None) -> Dict[str, Any]:
        """:meth:`Lease.commit`, awaited."""
        fields = self._commit_fields(tokens, input_tokens, output_tokens,
                                     latency_ms, outcome, retry_after_ms,
                                     usage)
        if self.fail_open:
            return self._fail_open_result("committed")
        try:
            reply = await self._client.request("commit", **fields)
        except Unreachable as e:
            return self._unreachable("commit", e, self._client.fail_open)
        return self._settled("committed", reply)

    async def commit_usage(self, response: Any = None, outcome: str = "ok",
                           latency_ms: Optional[int] = None
                           ) -> Dict[str, Any]:
        """:meth:`Lease.commit_usage`, awaited."""
        return await self.commit(latency_ms=latency_ms, outcome=outcome,
                                 **self._usage_fields(response))

    async def cancel(self) -> Dict[str, Any]:
        """Releases the reservation as if the call never happened."""
        if self.fail_open:
            return self._fail_open_result("cancelled")
        try:
            reply = await self._client.request("cancel", lease=self.id)
        except Unreachable as e:
            return self._unreachable("cancel", e, self._client.fail_open)
        return self._settled("cancelled", reply)

    async def __aenter__(self) -> "AsyncLease":
        return self

    async def __aexit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if self.settled is not None:
            return
        if exc_type is None:
            await self.cancel()
            return
        try:
            r = self.reported
            await self.commit(outcome="error", tokens=r.get("tokens"),
                              input_tokens=r.get("input_tokens"),
                              output_tokens=r.get("output_tokens"))
        except Error as e:  # never hide the block's own exception
            log.warning("brake: could not commit lease %s after %s: %s",
                        self.id, exc_type.__name__, e)
        return
