"""commit_usage: the tokens of OpenAI, Responses-API and Anthropic responses,
as SDK objects and as dicts, streamed and not, settled exactly."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import brake
from canned import CASES, CHAT, CHAT_STREAM, MESSAGE_STREAM, as_object

SHAPES = [("dict", lambda r: r), ("object", as_object)]


def _ids(case: Any) -> str:
    return case[0]


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: s[0])
@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_usage_read_from_every_shape(case: Any, shape: Any) -> None:
    _, response, inp, out = case
    response = shape[1](response)
    if isinstance(response, list):
        tally = brake.UsageTally(response)
        assert tally.complete
        usage = tally.usage
    else:
        usage = brake.usage_of(response)
    assert usage == brake.Usage(inp, out)
    assert usage.total_tokens == inp + out


def test_no_usage_and_partial_usage() -> None:
    assert brake.usage_of({"id": "x", "choices": []}) is None
    assert brake.usage_of(CHAT_STREAM[1]) is None  # a mid-stream chunk
    assert brake.usage_of(None) is None
    half = brake.UsageTally(MESSAGE_STREAM[-2:])  # the start was lost
    assert not half.complete and half.usage == brake.Usage(0, 15)
    zero = {"usage": {"prompt_tokens": 0, "completion_tokens": 0}}
    assert brake.usage_of(zero) == brake.Usage(0, 0)
    # bools and negatives are not counts
    assert brake.usage_of({"usage": {"input_tokens": True}}) is None
    assert brake.usage_of({"usage": {"input_tokens": -3,
                                     "output_tokens": 2}}) == brake.Usage(0, 2)


def _ledger(client: brake.Client, user: str, task: str) -> Any:
    rows = client.usage(user, task=task)["rows"]
    assert len(rows) == 1, rows
    return rows[0]


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: s[0])
@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_commit_usage_settles_exactly(daemon: Any, name: Any, case: Any,
                                      shape: Any) -> None:
    _, response, inp, out = case
    response = shape[1](response)
    user, task = name.of("u"), name.of("t")
    with brake.Client(daemon.sock) as client:
        lease = client.acquire(user, task, tokens=5000)
        if isinstance(response, list):  # a stream, chunk by chunk
            for chunk in response:
                assert lease.observe(chunk) is chunk
            reply = lease.commit_usage()
        else:
            reply = lease.commit_usage(response)
        assert reply["charged_tokens"] == inp + out
        row = _ledger(client, user, task)
        assert row["tokens"] == inp + out
        assert row["estimated"] == 0


@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_async_commit_usage_settles_exactly(daemon: Any, name: Any,
                                            case: Any) -> None:
    _, response, inp, out = case
    user, task = name.of("u"), name.of("t")

    async def run() -> Any:
        async with brake.AsyncClient(daemon.sock) as client:
            lease = await client.acquire(user, task, tokens=5000)
            return await lease.commit_usage(as_object(response))

    assert asyncio.run(run())["charged_tokens"] == inp + out
    with brake.Client(daemon.sock) as client:
        assert _ledger(client, user, task)["tokens"] == inp + out


def test_a_reported_zero_stays_zero_and_none_is_an_estimate(
        daemon: Any, name: Any) -> None:
    user, task = name.of("u"), name.of("t")
    with brake.Client(daemon.sock) as client:
        lease = client.acquire(user, task, tokens=700)
        zero = {"usage": {"prompt_tokens": 0, "completion_tokens": 0}}
        assert lease.commit_usage(zero)["charged_tokens"] == 0
        lease = client.acquire(user, task, tokens=700)
        assert lease.commit_usage(CHAT_STREAM[:3])["charged_tokens"] == 700
        row = _ledger(client, user, task)
        assert row["tokens"] == 700 and row["estimated"] == 1


def test_a_block_that_raises_mid_stream_commits_what_came(
        daemon: Any, name: Any) -> None:
    user, task = name.of("u"), name.of("t")
    with brake.Client(daemon.sock) as client:
        with pytest.raises(ConnectionResetError):
            with client.acquire(user, task, tokens=5000) as lease:
                for chunk in MESSAGE_STREAM[:4]:
                    lease.observe(as_object(chunk))
                raise ConnectionResetError("the stream broke")
        assert lease.settled == "committed"
        assert lease.result is not None
        assert lease.result["charged_tokens"] == 25 + 1
        assert client.status(task=task)["reserved"]["requests"] == 0


def test_commit_checks_its_outcome(daemon: Any, name: Any) -> None:
    with brake.Client(daemon.sock) as client:
        lease = client.acquire(name.of("u"), name.of("t"))
        with pytest.raises(ValueError, match="outcome"):
            lease.commit(outcome="fine")
        lease.cancel()
