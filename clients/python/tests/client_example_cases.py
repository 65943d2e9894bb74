"""The examples (clients/python/examples) run against the shared real braked.

ExampleCases holds them; test_client.py runs them as ExampleTest. Like
client_live_cases.py it needs unittest.TestCase as the other base and
client_harness.set_up_module() to have run.
"""

from __future__ import annotations

import os
import subprocess
import sys

import client_harness as harness
from client_harness import PYROOT, name

import brake  # found through the sys.path entry client_harness adds


class ExampleCases:
    """Mixed into ExampleTest (test_client.py) with unittest.TestCase."""

    def setUp(self) -> None:
        self.client = brake.Client(harness.daemon.sock, timeout=5)
        self.addCleanup(self.client.close)

    def run_example(self, *args: str) -> str:
        env = dict(os.environ, BRAKE_SOCKET=harness.daemon.sock)
        proc = subprocess.run(
            [sys.executable, os.path.join(PYROOT, "examples", args[0])]
            + list(args[1:]), env=env, capture_output=True, text=True,
            timeout=30)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        return proc.stdout

    def test_example_guard_chat(self) -> None:
        out = self.run_example("guard_chat.py", "--dry-run", "--user",
                               name("u"), "--task", name("t"))
        self.assertIn("charged", out)

    def test_example_guard_tool_loop(self) -> None:
        before = self.client.policy_get("task:*")["policy"]
        out = self.run_example("guard_tool_loop.py", "--user", name("u"))
        self.assertIn("loop", out)
        self.assertEqual(self.client.policy_get("task:*")["policy"], before)

    def test_example_guard_tool_loop_after_the_quick_start(self) -> None:
        # The README's Quick start leaves every user 2 requests a second.
        self.assertIsNone(self.client.policy_get("user:*")["policy"])
        self.client.policy_set("user:*", limits=[
            {"name": "rps", "resource": "requests", "algorithm": "token_bucket",
             "rate": 2, "per_ms": 1000, "burst": 2}])
        try:
            user = name("u")
            out = self.run_example("guard_tool_loop.py", "--user", user)
            self.assertIn("stopped: the agent was stuck in a loop", out)
            self.assertIsNone(self.client.policy_get("user:" + user)["policy"])
        finally:
            self.client.policy_delete("user:*")
