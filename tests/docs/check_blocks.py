"""Checks on the docs' blocks as a whole: every ```json block is valid JSON and
every marker is a known one, relative links and their anchors resolve, README
links the docs (JsonBlocksTest); every policy and prices block is accepted by
a real braked as written, and every config block starts one (PoliciesTest).
"""

import os
import re
import unittest

from braked_daemon import Daemon, DaemonCase, ok
from doc_markers import blocks, marked
from docs_env import CHECKED, DOCS, ROOT, read


class JsonBlocksTest(unittest.TestCase):
    KNOWN = {"policy", "prices", "reply", "config", "example"}

    def test_every_json_block_is_valid(self):
        for doc in CHECKED:
            for b in blocks(doc):
                if b.info == "json":
                    self.assertTrue(b.values(), b.where() + ": empty block")
                if b.marker is not None and not b.marker.startswith("policy"):
                    head = b.marker.split()[0].rstrip(":")
                    self.assertIn(head, self.KNOWN, b.where())
                if b.marker is not None and b.marker.split()[0].rstrip(":") \
                        in self.KNOWN:
                    self.assertEqual(b.info, "json", b.where())

    def test_links_stay_in_the_repository(self):
        """Every relative link in a Markdown file of the repository (README.md,
        docs/, clients/, ...) names a file inside the repository that exists,
        and a heading of it that exists (GitHub's anchors): a clone must not
        hold a dead link or one into a folder beside it."""
        def slugs(path):
            out = set()
            for line in read(path).splitlines():
                m = re.match(r"^#+\s+(.*)$", line)
                if m:
                    slug = re.sub(r"[^\w\- ]", "", m.group(1).lower())
                    out.add(slug.replace(" ", "-"))
            return out

        root = os.path.realpath(ROOT)
        checked = 0
        for here in markdown_files():
            text = re.sub(r"```.*?```", "", read(here), flags=re.S)
            for target in re.findall(r"\]\(([^)\s]+)\)", text):
                if re.match(r"^[a-z]+:", target):
                    continue  # http:, mailto:
                checked += 1
                where = "%s: %s" % (os.path.relpath(here, root), target)
                path, _, anchor = target.partition("#")
                full = os.path.realpath(os.path.join(os.path.dirname(here),
                                                     path)) if path else here
                self.assertTrue(full == root or full.startswith(root + os.sep),
                                where + " leaves the repository")
                self.assertTrue(os.path.exists(full), where + " is dead")
                if anchor and os.path.isfile(full):
                    self.assertIn(anchor, slugs(full), where)
        self.assertGreater(checked, 50)

    def test_readme_links_the_docs(self):
        readme = read(os.path.join(ROOT, "README.md"))
        for doc in sorted(os.listdir(DOCS)):
            if doc.endswith(".md"):
                self.assertIn("(docs/%s)" % doc, readme, doc)


def markdown_files():
    """The repository's Markdown files (build folders and .git left out)."""
    for top, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if not d.startswith(".") and
                   not d.startswith("build") and d != "node_modules"]
        for f in files:
            if f.endswith(".md"):
                yield os.path.join(top, f)


class PoliciesTest(DaemonCase):
    """Every policy and prices block is accepted by braked, as written."""

    def test_policies_and_prices_are_accepted(self):
        n = 0
        for doc in CHECKED:
            for args, b in marked(doc, "prices"):
                ok(self, self.c.call("prices.set", **b.values()[0]), b.where())
            for args, b in marked(doc, "policy"):
                self.assertIn("scope", args, b.where())
                (policy,) = b.values()
                reply = self.c.call("policy.set", scope=args["scope"], **policy)
                ok(self, reply, b.where())
                # The canonical policy keeps every value as written.
                canonical = reply["policy"]
                for i, limit in enumerate(policy.get("limits", [])):
                    for k, v in limit.items():
                        self.assertEqual(canonical["limits"][i].get(k), v,
                                         "%s: limits[%d].%s" % (b.where(), i, k))
                for k, v in policy.get("breaker", {}).items():
                    if isinstance(v, dict):
                        for kk, vv in v.items():
                            self.assertEqual(canonical["breaker"][k][kk], vv,
                                             b.where())
                    else:
                        self.assertEqual(canonical["breaker"][k], v, b.where())
                n += 1
        self.assertGreaterEqual(n, 10)

    def test_config_blocks_start_braked(self):
        for doc in CHECKED:
            for args, b in marked(doc, "config"):
                (config,) = b.values()
                d = Daemon(config=b.text)
                try:
                    scopes = [p["scope"] for p in
                              ok(self, d.conn.call("policy.list"))["policies"]]
                    self.assertEqual(sorted(scopes),
                                     sorted(config.get("policies", {})),
                                     b.where())
                    for model in config.get("prices", {}):
                        ok(self, d.conn.call("acquire", user="u", task="t",
                                             model=model, tokens=10),
                           b.where())
                finally:
                    d.close()
