"""AsyncClient against a real braked: one pipelined connection on which a
waiting acquire holds up nobody else."""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
from typing import Any, List

import pytest

import brake
import client_harness as harness


async def _wait_for_waiters(client: brake.AsyncClient, user: str,
                            count: int) -> None:
    """Until `count` acquires of `user` wait in the daemon's queue."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        status = await client.status(user=user)
        if status.get("waiters", 0) >= count:
            return
        await asyncio.sleep(0.005)
    raise AssertionError("fewer than %d waiters: %r" % (count, status))


def test_100_waiting_coroutines_get_what_the_bucket_allows(
        daemon: Any, name: Any) -> None:
    user = name.of("u")
    rate_per_s, burst, wait_ms = 20, 20, 2000

    async def run() -> Any:
        async with brake.AsyncClient(daemon.sock) as client:
            await client.policy_set("user:" + user, limits=[{
                "name": "rps", "resource": "requests",
                "algorithm": "token_bucket", "rate": rate_per_s,
                "per_ms": 1000, "burst": burst}])
            started = time.monotonic()
            acquires = [asyncio.ensure_future(client.acquire(
                user, name.of("t"), wait_ms=wait_ms)) for _ in range(100)]
            await _wait_for_waiters(client, user, 10)
            pings: List[float] = []
            for _ in range(20):  # while the acquires wait
                t0 = time.monotonic()
                await client.ping()
                pings.append(time.monotonic() - t0)
            waiting = sum(not a.done() for a in acquires)
            results = await asyncio.gather(*acquires, return_exceptions=True)
            return results, pings, waiting, time.monotonic() - started

    results, pings, waiting, took = asyncio.run(run())
    grants = [r for r in results if isinstance(r, brake.AsyncLease)]
    denials = [r for r in results if isinstance(r, brake.Denied)]
    assert len(grants) + len(denials) == 100, results
    # burst + rate * wait: what a 20/s bucket with 20 banked admits in 2 s
    allowed = burst + rate_per_s * wait_ms // 1000
    assert allowed - 1 <= len(grants) <= allowed + 1, len(grants)
    assert all(isinstance(d, (brake.WaitTimedOut, brake.RateLimited))
               for d in denials), denials
    assert max(g.waited_ms for g in grants) <= wait_ms
    assert waiting > 0  # the pings were answered while acquires waited
    # A ping held behind a wait would take seconds; a scheduling hiccup of a
    # loaded test machine may cost one of them a few ms.
    assert sorted(pings)[len(pings) // 2] < 0.010, pings
    assert max(pings) < 0.100, pings
    assert took < wait_ms / 1000 + 1.5


def test_leases_settle_in_async_with(daemon: Any, name: Any) -> None:
    user, task = name.of("u"), name.of("t")

    async def run() -> Any:
        async with brake.AsyncClient(daemon.sock) as client:
            async with await client.acquire(user, task, tokens=10) as lease:
                pass  # neither committed nor cancelled: cancelled
            assert lease.settled == "cancelled"
            with pytest.raises(KeyError):
                async with await client.acquire(user, task,
                                                tokens=10) as failed:
                    failed.report(input_tokens=3, output_tokens=4)
                    raise KeyError("tool failed")
            assert failed.settled == "committed"
            assert failed.result is not None
            assert failed.result["charged_tokens"] == 7
            again = await failed.commit(tokens=99)
            assert again.get("duplicate") is True
            return await client.status(task=task)

    status = asyncio.run(run())
    assert status["spend"]["tokens"] == 7
    assert status["reserved"]["requests"] == 0


def test_errors_name_the_field_and_keep_the_connection(
        daemon: Any, name: Any) -> None:
    async def run() -> None:
        async with brake.AsyncClient(daemon.sock) as client:
            with pytest.raises(brake.BadRequest, match="tokens"):
                await client.acquire(name.of("u"), name.of("t"), tokens=-1)
            with pytest.raises(brake.UnknownOp):
                await client.request("no.such.op")
            with pytest.raises(brake.UnknownLease):
                await client.request("commit", lease="nope", tokens=1)
            assert (await client.ping())["version"] == brake.__version__

    asyncio.run(run())


def test_denials_raise_their_reasons_type(daemon: Any, name: Any) -> None:
    user = name.of("u")

    async def run() -> None:
        async with brake.AsyncClient(daemon.sock) as client:
            await client.policy_set("user:" + user, limits=[
                {"name": "one", "resource": "requests",
                 "algorithm": "concurrency", "limit": 1},
                {"name": "cap", "resource": "tokens", "algorithm": "quota",
                 "limit": 100, "period": "day"}])
            lease = await client.acquire(user, name.of("t"))
            with pytest.raises(brake.ConcurrencyLimited) as c:
                await client.acquire(user, name.of("t"))
            assert c.value.limit == "one"
            await lease.cancel()
            with pytest.raises(brake.TooLarge) as big:
                await client.acquire(user, name.of("t"), tokens=101)
            assert big.value.retry_after_ms is None

    asyncio.run(run())


def test_reconnects_after_a_restart(name: Any) -> None:
    with tempfile.TemporaryDirectory(prefix="brake-aio-") as tmp:
        d = harness.Daemon(tmp).start()
        try:
            async def run() -> None:
                async with brake.AsyncClient(d.sock, timeout=5) as client:
                    await client.ping()
                    d.stop()
                    with pytest.raises(brake.Unreachable):
                        await client.ping()  # sent again once: still down
                    d.start()
                    assert (await client.ping())["ok"] is True
                    lease = await client.acquire(name.of("u"), name.of("t"))
                    await lease.commit(tokens=1)

            asyncio.run(run())
        finally:
            d.stop()


def test_fail_open(name: Any) -> None:
    missing = os.path.join(tempfile.gettempdir(), "brake-none",
                           name.of("s") + ".sock")

    async def run() -> None:
        async with brake.AsyncClient(missing, fail_open=True) as client:
            lease = await client.acquire("u", "t")
            assert lease.fail_open and lease.id is None
            assert (await lease.commit(tokens=5))["fail_open"] is True
        async with brake.AsyncClient(missing) as client:
            with pytest.raises(brake.Unreachable) as e:
                await client.acquire("u", "t")
            assert e.value.sent is False and missing in str(e.value)

    asyncio.run(run())


def test_an_abandoned_wait_that_is_granted_later_is_cancelled(
        daemon: Any, name: Any) -> None:
    user, task = name.of("u"), name.of("t")

    async def run() -> Any:
        async with brake.AsyncClient(daemon.sock) as client:
            await client.policy_set("user:" + user, limits=[{
                "name": "one", "resource": "requests",
                "algorithm": "concurrency", "limit": 1}])
            holder = await client.acquire(user, task)
            waiter = asyncio.ensure_future(
                client.acquire(user, task, wait_ms=5000))
            await _wait_for_waiters(client, user, 1)
            waiter.cancel()  # the caller gives up; the daemon still waits
            with pytest.raises(asyncio.CancelledError):
                await waiter
            await holder.commit(tokens=1)  # now the waiter is granted ...
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline:
                status = await client.status(user=user)
                if (status["reserved"]["requests"] == 0
                        and status.get("waiters", 0) == 0):
                    return status  # ... and cancelled by the client
                await asyncio.sleep(0.01)
            return status

    status = asyncio.run(run())
    assert status["reserved"]["requests"] == 0, status
    assert status["spend"]["requests"] == 1, status


def test_a_held_cap_raises_reserved_and_a_waiting_acquire_gets_it(
        daemon: Any, name: Any) -> None:
    user = name.of("u")

    async def run() -> Any:
        async with brake.AsyncClient(daemon.sock) as client:
            await client.policy_set("user:" + user, limits=[{
                "name": "cap", "resource": "tokens", "algorithm": "quota",
                "limit": 1000, "period": "total"}])
            big = await client.acquire(user, name.of("t"), tokens=900)
            with pytest.raises(brake.Reserved) as held:
                await client.acquire(user, name.of("t"), tokens=200)
            waiting = asyncio.ensure_future(
                client.acquire(user, name.of("t"), tokens=200, wait_ms=5000))
            await _wait_for_waiters(client, user, 1)
            started = time.monotonic()
            await big.commit(tokens=100)  # settles low: 900 tokens free
            lease = await waiting
            took = time.monotonic() - started
            await lease.commit(tokens=900)  # now 1,000 are spent
            with pytest.raises(brake.QuotaExhausted):
                await client.acquire(user, name.of("t"), tokens=1,
                                     wait_ms=5000)
            return held.value, took

    held, took = asyncio.run(run())
    assert held.reason == "reserved" and held.held == 900
    assert held.retry_after_ms is not None
    assert took < 2.0, took  # woken by the settlement, not the wait's end
