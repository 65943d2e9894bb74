"""The package as pip installed it (tests/run): its files, its version."""

from __future__ import annotations

import os
import re

import pytest

import brake
from client_harness import INSTALLED, PYROOT


@pytest.mark.skipif(not INSTALLED, reason="not run from an installed venv")
def test_imported_from_the_venv_not_the_repo() -> None:
    path = os.path.realpath(brake.__file__)
    assert path.startswith(os.path.realpath(INSTALLED) + os.sep), path
    assert not path.startswith(os.path.realpath(PYROOT) + os.sep), path
    assert os.path.exists(os.path.join(os.path.dirname(path), "py.typed"))


def test_version_is_the_daemons(daemon) -> None:
    cmake = os.path.join(PYROOT, "..", "..", "CMakeLists.txt")
    with open(cmake) as f:
        m = re.search(r"project\(brake VERSION ([0-9.]+)", f.read())
    assert m is not None
    assert brake.__version__ == m.group(1)
    with brake.Client(daemon.sock) as client:
        assert client.ping()["version"] == brake.__version__


def test_every_reason_and_code_has_its_type() -> None:
    reasons = {"rate_limited": brake.RateLimited,
               "quota_exhausted": brake.QuotaExhausted,
               "cost_cap": brake.CostCap, "breaker_open": brake.BreakerOpen,
               "concurrency": brake.ConcurrencyLimited,
               "queue_full": brake.QueueFull, "timeout": brake.WaitTimedOut,
               "too_large": brake.TooLarge, "reserved": brake.Reserved}
    for reason, cls in reasons.items():
        d = brake.denied_from_reply({"granted": False, "reason": reason,
                                     "retry_after_ms": None})
        assert type(d) is cls and isinstance(d, brake.Denied)
        assert d.reason == reason
    assert type(brake.denied_from_reply({"reason": "new"})) is brake.Denied
    codes = {"bad_json": brake.BadJson, "bad_request": brake.BadRequest,
             "unknown_op": brake.UnknownOp,
             "line_too_long": brake.LineTooLong,
             "unknown_lease": brake.UnknownLease,
             "forbidden": brake.Forbidden, "unavailable": brake.Unavailable,
             "internal": brake.Internal,
             "too_many_connections": brake.TooManyConnections}
    for code, ecls in codes.items():
        e = brake.error_from_reply({"ok": False, "error": {
            "code": code, "message": "m"}})
        assert type(e) is ecls and e.code == code
