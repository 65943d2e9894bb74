#!/usr/bin/env python3
"""Keeps docs/ honest: checks CONCEPTS.md, COOKBOOK.md, PROTOCOL.md and
the config table of PROTOCOL.md against the code and a real braked.

    BRAKED=build/daemon/braked python3 tests/docs/docs_test.py [-v] [TEST...]
    python3 tests/docs/docs_test.py build/daemon/braked [-v] [TEST...]

DOCS_TEST_SHOW=1 prints the replies the examples are compared with.

ctest runs it as "docs" (tests/CMakeLists.txt sets BRAKED). Standard library only.

This file only runs the checks; they live next to it:

    docs_env.py            paths, the braked and brakectl under test, DOCS_TEST_SHOW
    doc_markers.py         code blocks and their <!-- markers --> (the conventions
                           the docs follow), markdown tables
    braked_daemon.py       a braked on a temporary socket and database
    check_blocks.py        JsonBlocksTest, PoliciesTest: every block, every policy
    check_recipes.py       RecipesTest: the cookbook's recipes
    reference_tables.py    the ops table, the reference's field tables and types
    check_reference.py     ReferenceTest: the protocol reference and its examples
    check_config_table.py  ConfigTableTest: PROTOCOL.md's config table
"""

import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

# docs_env takes a braked path given as first argument off sys.argv.
from docs_env import BRAKED  # noqa: E402
from check_blocks import JsonBlocksTest, PoliciesTest  # noqa: E402
from check_config_table import ConfigTableTest  # noqa: E402
from check_recipes import RecipesTest  # noqa: E402
from check_reference import ReferenceTest  # noqa: E402

# unittest.main() runs the TestCases of this module. Naming them as its own
# keeps their ids as they were when they were defined here
# (__main__.RecipesTest.test_1_provider_tier), in -v output and in failures.
for case in (JsonBlocksTest, PoliciesTest, RecipesTest, ReferenceTest,
             ConfigTableTest):
    case.__module__ = __name__
del case  # a TestCase left in this module would run twice


if __name__ == "__main__":
    if not BRAKED or not os.access(BRAKED, os.X_OK):
        print("docs_test: no braked (set BRAKED)", file=sys.stderr)
        sys.exit(1)
    unittest.main()
