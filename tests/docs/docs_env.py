"""Where the docs test finds things: the source tree, the checked docs, the
braked and brakectl under test (a path as first argument, BRAKED/BRAKECTL, or a
build*/ folder), and whether DOCS_TEST_SHOW asks for the compared replies.

Importing it takes a braked path given as the first argument off sys.argv, so
that unittest sees only its own arguments.
"""

import os
import shutil
import sys


HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DOCS = os.path.join(ROOT, "docs")
CHECKED = ["CONCEPTS.md", "COOKBOOK.md", "PROTOCOL.md"]


def _find_braked() -> str:
    if len(sys.argv) > 1 and os.sep in sys.argv[1]:  # a path, not a test
        return sys.argv.pop(1)
    env = os.environ.get("BRAKED")
    if env:
        return env
    for build in sorted(os.listdir(ROOT)):
        path = os.path.join(ROOT, build, "daemon", "braked")
        if build.startswith("build") and os.access(path, os.X_OK):
            return path
    return shutil.which("braked") or ""


BRAKED = _find_braked()
BRAKECTL = os.environ.get("BRAKECTL") or os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(BRAKED))), "ctl",
    "brakectl")
SHOW = bool(os.environ.get("DOCS_TEST_SHOW"))  # print the replies compared


def read(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read()
