"""Fingerprints of tool calls, for the loop breaker."""

from __future__ import annotations

import hashlib
import json
from typing import Any


def canonical_json(value: Any) -> str:
    """JSON with sorted keys, compact separators and UTF-8 kept as is."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"),
                      ensure_ascii=False, allow_nan=False)


def fingerprint(tool_name: str, arguments: Any = None) -> str:
    """The same string for the same call, to pass as ``acquire(fingerprint=)``.

    ``sha256(tool_name + "\\n" + canonical_json(arguments))`` in hex, first
    32 characters. Key order in dicts does not matter; anything else does
    (``1`` and ``1.0`` differ, as do lists in another order). ``arguments``
    must be JSON-serialisable (dicts, lists, strings, numbers, bools, None).
    This formula is part of the API: it does not change between versions.
    """
    data = tool_name + "\n" + canonical_json(arguments)
    return hashlib.sha256(data.encode("utf-8")).hexdigest()[:32]
