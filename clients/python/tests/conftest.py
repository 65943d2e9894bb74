"""pytest fixtures of the brake package tests: a real braked per session.

The unittest cases in test_client.py start their own (client_harness's
set_up_module); the pytest tests here share `daemon`.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import types
from typing import Iterator

import pytest

import client_harness as harness


@pytest.fixture(scope="session")
def daemon() -> Iterator[harness.Daemon]:
    if not harness.BRAKED or not os.access(harness.BRAKED, os.X_OK):
        pytest.skip("no braked: set BRAKED")
    tmp = tempfile.mkdtemp(prefix="brake-pytest-")
    d = harness.Daemon(tmp)
    d.start()
    yield d
    d.stop()
    shutil.rmtree(tmp, ignore_errors=True)


@pytest.fixture
def name() -> types.SimpleNamespace:
    """`name.of("u")`: a name no other test uses."""
    return types.SimpleNamespace(of=harness.name)
