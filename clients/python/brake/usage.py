"""The tokens an LLM response reports, read from any SDK's shape.

Duck-typed, with no SDK imported: a response may be the SDK's object
(attributes) or a dict (keys), and it may be

- an OpenAI chat or completions response (``usage.prompt_tokens``,
  ``usage.completion_tokens``), or a stream chunk carrying ``usage`` (the
  last one, with ``stream_options={"include_usage": True}``);
- an OpenAI Responses-API response (``usage.input_tokens``,
  ``usage.output_tokens``), or its stream's ``response.completed`` (also
  ``response.incomplete``, ``response.failed``) event;
- an Anthropic message (``usage.input_tokens``, ``usage.output_tokens``; cache
  writes and reads count as input, as the daemon prices them), or its stream's
  ``message_start`` and ``message_delta`` events;
- a usage object itself.

A stream reports its usage across events (Anthropic: the input in
``message_start``, the output so far in each ``message_delta``): a
:class:`UsageTally` takes every chunk or event and keeps the latest figure of
each side. A figure the provider reports is kept as it is, zero included.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Optional

_ANTHROPIC_CACHE = ("cache_creation_input_tokens", "cache_read_input_tokens")


def _field(obj: Any, name: str) -> Any:
    if isinstance(obj, dict):
        return obj.get(name)
    return getattr(obj, name, None)


def _count(obj: Any, name: str) -> Optional[int]:
    value = _field(obj, name)
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return max(0, value)


@dataclass(frozen=True)
class Usage:
    """Tokens of one call: what :meth:`Lease.commit` takes."""

    input_tokens: int
    output_tokens: int

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


def _sides(usage: Any) -> "tuple[Optional[int], Optional[int]]":
    """(input, output) of a usage object, each None when it does not say."""
    if usage is None:
        return None, None
    prompt = _count(usage, "prompt_tokens")
    completion = _count(usage, "completion_tokens")
    if prompt is not None or completion is not None:
        return prompt, completion
    inp = _count(usage, "input_tokens")
    if inp is not None:
        for name in _ANTHROPIC_CACHE:
            inp += _count(usage, name) or 0
    return inp, _count(usage, "output_tokens")


def _is_usage(obj: Any) -> bool:
    return any(_count(obj, n) is not None for n in (
        "prompt_tokens", "completion_tokens", "input_tokens", "output_tokens"))


class UsageTally:
    """The usage of a stream, from its chunks or events as they come.

    ``add(chunk)`` for each; :attr:`usage` is the result (None until some
    side was reported), :attr:`complete` whether both sides were.
    """

    def __init__(self, events: Iterable[Any] = ()) -> None:
        self.input_tokens: Optional[int] = None
        self.output_tokens: Optional[int] = None
        for event in events:
            self.add(event)

    def add(self, event: Any) -> None:
        """Takes one response, stream chunk or event (others are ignored)."""
        if event is None:
            return
        kind = _field(event, "type")
        if kind == "message_start":
            self._take(_field(_field(event, "message"), "usage"))
        elif kind in ("response.completed", "response.incomplete",
                      "response.failed"):
            self._take(_field(_field(event, "response"), "usage"))
        elif _field(event, "usage") is not None:
            self._take(_field(event, "usage"))
        elif _is_usage(event):
            self._take(event)

    def _take(self, usage: Any) -> None:
        inp, out = _sides(usage)
        if inp is not None:
            self.input_tokens = inp
        if out is not None:
            self.output_tokens = out

    @property
    def complete(self) -> bool:
        return self.input_tokens is not None and self.output_tokens is not None

    @property
    def usage(self) -> Optional[Usage]:
        if self.input_tokens is None and self.output_tokens is None:
            return None
        return Usage(self.input_tokens or 0, self.output_tokens or 0)


def usage_of(response: Any) -> Optional[Usage]:
    """The usage one response (or chunk, event, usage object) reports; None
    when it reports none."""
    return UsageTally((response,)).usage
