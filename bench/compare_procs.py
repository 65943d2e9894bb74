"""Processes for bench/compare: running a tool, waiting for a server, stopping
it, and what /proc says of the machine and a process.

No measuring here: bench/compare measures.
"""

import os
import signal
import subprocess
import time


class Failed(Exception):
    """A server would not start or a run failed; the message says which."""


def load_average():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def cpu_seconds(pid):
    """User + system CPU time of a process, all threads, from /proc."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run(cmd, timeout, **kw):
    """Runs cmd, returns stdout; raises Failed with its stderr if it fails."""
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, timeout=timeout, **kw)
    except subprocess.TimeoutExpired:
        raise Failed("timed out after %ss: %s" % (timeout, " ".join(cmd)))
    if p.returncode != 0:
        raise Failed("%s exited %d: %s" % (os.path.basename(cmd[0]),
                                           p.returncode, p.stderr.strip()))
    return p.stdout


def wait_for(check, what, seconds=15.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except (Failed, OSError):
            pass
        time.sleep(0.05)
    raise Failed("%s did not come up within %.0f s" % (what, seconds))


def stop(proc, seconds=20.0):
    """SIGTERM (a clean shutdown flushes), then SIGKILL after `seconds`."""
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def git_commit(src):
    try:
        head = run(["git", "-C", src, "rev-parse", "--short", "HEAD"], 10)
        dirty = run(["git", "-C", src, "status", "--porcelain",
                     "--untracked-files=no"], 10)
        return head.strip() + (" (with uncommitted changes)" if dirty.strip()
                               else "")
    except (Failed, OSError):
        return "unknown"
