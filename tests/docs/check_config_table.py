"""Checks on the config table of PROTOCOL.md against braked --help-config
(ConfigTableTest): the same keys, defaults, integer bounds and whether each is
reloaded on SIGHUP.
"""

import os
import re
import subprocess
import unittest

from doc_markers import code, tables
from docs_env import BRAKED, DOCS, read


class ConfigTableTest(unittest.TestCase):
    def test_settings_match_help_config(self):
        text = subprocess.run([BRAKED, "--help-config"], check=True,
                              capture_output=True, text=True).stdout
        settings = {}
        for line in text.splitlines():
            m = re.match(r"^(\w+)\s+\((.*?)(?:, default (.*?))?, "
                         r"(reloadable|restart to change)\)$", line)
            if m:
                settings[m.group(1)] = (m.group(2), m.group(3),
                                        m.group(4) == "reloadable")
        self.assertIn("lease_ttl_ms", settings)
        doc = {}
        for heading, rows in tables(read(os.path.join(DOCS, "PROTOCOL.md"))):
            if rows[0][0] == "key" and rows[0][-1] == "on SIGHUP":
                doc = {code(r[0]): r for r in rows[1:]}
        self.assertEqual(sorted(doc), sorted(settings))
        for name, (type_, default, reloadable) in settings.items():
            row = doc[name]
            self.assertEqual(row[3], "reloaded" if reloadable else "restart",
                             name)
            if default is not None:
                self.assertEqual(code(row[2]), default, name)
            m = re.match(r"integer \[(\d+), (\d+)\]", type_)
            if m:
                dm = re.search(r"(\d+)\.\.(\d+)", row[1])
                self.assertTrue(dm, name)
                self.assertEqual(dm.groups(), m.groups(), name)
