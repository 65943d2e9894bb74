"""@client.guard on tools, sync and async, against a real braked."""

from __future__ import annotations

import asyncio
from typing import Any, Dict, List

import pytest

import brake
from canned import CHAT, as_object

REPEATS = 5


def _loop_policy(client: brake.Client, task: str) -> None:
    client.policy_set("task:" + task, breaker={
        "loop": {"repeats": REPEATS, "window_ms": 60000}, "open_ms": 60000})


def test_ten_identical_calls_trip_the_loop_breaker(daemon: Any,
                                                   name: Any) -> None:
    user, task = name.of("u"), name.of("t")
    calls: List[str] = []
    with brake.Client(daemon.sock) as client:
        _loop_policy(client, task)

        @client.guard(user=user, task=task, resource="search")
        def search(query: str, limit: int = 10) -> Dict[str, Any]:
            calls.append(query)
            return {"hits": limit}

        outcomes: List[Any] = []
        for _ in range(10):
            try:
                outcomes.append(search("same query"))
            except brake.Denied as d:
                outcomes.append(d)
        # The repeats-th identical call is granted and trips the breaker;
        # every one after is refused, and the tool never runs for them.
        assert outcomes[:REPEATS] == [{"hits": 10}] * REPEATS
        for d in outcomes[REPEATS:]:
            assert isinstance(d, brake.BreakerOpen), d
            assert d.cause == "loop" and d.scope == "task:" + task
        assert len(calls) == REPEATS
        status = client.status(task=task)
        assert status["spend"]["requests"] == REPEATS
        assert status["reserved"]["requests"] == 0


def test_arguments_bound_not_spelled(daemon: Any, name: Any) -> None:
    """f(x, 10), f(x) and f(x, limit=10) are the same call; f(y) is not."""
    user, task = name.of("u"), name.of("t")
    with brake.Client(daemon.sock) as client:
        _loop_policy(client, task)

        @client.guard(user=user, task=task)
        def search(query: str, limit: int = 10) -> int:
            return limit

        for i in range(REPEATS - 1):
            search("a", limit=10)
            search("b" + str(i))  # other calls do not count
        assert search("a") == 10  # the REPEATS-th: granted, trips
        with pytest.raises(brake.BreakerOpen):
            search("a", 10)


def test_outcome_latency_and_usage_are_committed(daemon: Any,
                                                 name: Any) -> None:
    user, task = name.of("u"), name.of("t")
    with brake.Client(daemon.sock) as client:
        client.policy_set("task:" + task, breaker={"errors": {
            "ratio": 0.5, "min_calls": 3, "window_ms": 60000},
            "open_ms": 60000})

        @client.guard(user=user, task=task, tokens=100)
        def chat(prompt: str) -> Any:
            return as_object(CHAT)

        @client.guard(user=user, task=task)
        def broken(x: int) -> None:
            raise RuntimeError("tool failed %d" % x)

        assert chat("hi").usage.prompt_tokens == 19
        for x in (3, 4):
            with pytest.raises(RuntimeError, match="tool failed %d" % x):
                broken(x)
        status = client.status(task=task)
        assert status["spend"]["requests"] == 3
        assert status["spend"]["tokens"] == 19 + 10
        assert status["reserved"]["requests"] == 0
        # Two of three calls committed as errors: the errors rule trips.
        with pytest.raises(brake.BreakerOpen) as d:
            chat("again")
        assert d.value.cause == "errors"


def test_async_guard(daemon: Any, name: Any) -> None:
    user, task = name.of("u"), name.of("t")
    with brake.Client(daemon.sock) as sync:
        _loop_policy(sync, task)

    async def run() -> List[Any]:
        async with brake.AsyncClient(daemon.sock) as client:

            @client.guard(user=user, task=task)
            async def fetch(url: str) -> str:
                await asyncio.sleep(0)
                return url.upper()

            out: List[Any] = []
            for _ in range(REPEATS + 2):
                try:
                    out.append(await fetch("http://x"))
                except brake.Denied as d:
                    out.append(d)
            return out

    out = asyncio.run(run())
    assert out[:REPEATS] == ["HTTP://X"] * REPEATS
    assert all(isinstance(d, brake.BreakerOpen) and d.cause == "loop"
               for d in out[REPEATS:])


def test_guard_refuses_the_wrong_kind_of_function(daemon: Any) -> None:
    client = brake.Client(daemon.sock)
    aclient = brake.AsyncClient(daemon.sock)

    async def coro() -> None:
        pass

    def plain() -> None:
        pass

    with pytest.raises(TypeError, match="AsyncClient.guard"):
        client.guard(user="u", task="t")(coro)
    with pytest.raises(TypeError, match="Client.guard"):
        aclient.guard(user="u", task="t")(plain)
    client.close()
