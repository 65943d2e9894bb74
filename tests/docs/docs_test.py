#!/usr/bin/env python3
"""Keeps docs/ honest: checks CONCEPTS.md, COOKBOOK.md, PROTOCOL-REFERENCE.md and
the config table of OPERATIONS.md against the code and a real braked.

    BRAKED=build/daemon/braked python3 tests/docs/docs_test.py [-v] [TEST...]
    python3 tests/docs/docs_test.py build/daemon/braked [-v] [TEST...]

DOCS_TEST_SHOW=1 prints the replies the examples are compared with.

ctest runs it as "docs" (tests/CMakeLists.txt sets BRAKED). Standard library only.

Conventions in the docs (an HTML comment on the line before a ```json block):

    <!-- policy: SCOPE [recipe=ID] -->  the block is a policy: sent with policy.set
    <!-- prices [recipe=ID] -->         the block is a prices.set request body
    <!-- reply: ID -->                  what an agent sees in recipe ID: compared
                                         with the reply the recipe's scenario gets
    <!-- config -->                     a config file: braked must start on it
    <!-- example -->                    PROTOCOL-REFERENCE.md: a request line and
                                         its reply, replayed in order

Every ```json block, marked or not, must be valid JSON (one value, or one per
line).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DOCS = os.path.join(ROOT, "docs")
CHECKED = ["CONCEPTS.md", "COOKBOOK.md", "PROTOCOL-REFERENCE.md"]


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


# ---- markdown -----------------------------------------------------------------

class Block:
    def __init__(self, doc, line, info, text, marker):
        self.doc = doc          # file name
        self.line = line        # line of the opening fence
        self.info = info        # "json", "sh", ...
        self.text = text
        self.marker = marker    # the <!-- ... --> text before it, or None

    def where(self) -> str:
        return "%s:%d" % (self.doc, self.line)

    def values(self):
        """The block's JSON: one value, or one per line."""
        try:
            return [json.loads(self.text)]
        except ValueError:
            pass
        out = []
        for n, line in enumerate(self.text.splitlines()):
            if line.strip():
                try:
                    out.append(json.loads(line))
                except ValueError as e:
                    raise AssertionError("%s: line %d of the block is not JSON: %s"
                                         % (self.where(), n + 1, e))
        return out


def blocks(doc: str):
    lines = read(os.path.join(DOCS, doc)).splitlines()
    out = []
    i = 0
    while i < len(lines):
        m = re.match(r"^```(\S*)\s*$", lines[i])
        if not m or not m.group(1):
            if lines[i].startswith("```"):
                # a bare ``` opening: skip to its end
                j = i + 1
                while j < len(lines) and not lines[j].startswith("```"):
                    j += 1
                i = j + 1
                continue
            i += 1
            continue
        start = i
        j = i + 1
        while j < len(lines) and not lines[j].startswith("```"):
            j += 1
        marker = None
        k = start - 1
        while k >= 0 and not lines[k].strip():
            k -= 1
        if k >= 0:
            mm = re.match(r"^<!--\s*(.*?)\s*-->$", lines[k].strip())
            if mm:
                marker = mm.group(1)
        out.append(Block(doc, start + 1, m.group(1),
                         "\n".join(lines[start + 1:j]), marker))
        i = j + 1
    return out


def marked(doc: str, kind: str):
    """(args dict, block) for blocks whose marker starts with `kind`."""
    out = []
    for b in blocks(doc):
        if b.marker is None:
            continue
        head, _, rest = b.marker.partition(" ")
        if head.rstrip(":") != kind:
            continue
        args = {}
        for word in rest.split():
            if "=" in word:
                k, v = word.split("=", 1)
                args[k] = v
            else:
                args.setdefault("scope", word)
        out.append((args, b))
    return out


def recipe_block(kind: str, recipe: str) -> Block:
    for args, b in marked("COOKBOOK.md", kind):
        if args.get("recipe") == recipe or (kind == "reply" and
                                             args.get("scope") == recipe):
            return b
    raise AssertionError("COOKBOOK.md has no <!-- %s ... %s --> block"
                         % (kind, recipe))


def tables(text: str):
    """Markdown tables as lists of row cell lists (header first), with the
    heading they are under."""
    out = []
    heading = ""
    rows = []
    for line in text.splitlines() + [""]:
        if line.startswith("#"):
            heading = line.lstrip("#").strip()
        if line.startswith("|"):
            cells = [c.strip() for c in
                     re.split(r"(?<!\\)\|", line.strip())[1:-1]]
            if not all(re.fullmatch(r":?-+:?", c) for c in cells):
                rows.append(cells)
        elif rows:
            out.append((heading, rows))
            rows = []
    return out


def code(cell: str) -> str:
    return cell.replace("`", "").strip()


# ---- a daemon -----------------------------------------------------------------

class Daemon:
    """A braked on a temporary socket and database."""

    def __init__(self, config=None):
        self.dir = tempfile.mkdtemp(prefix="brake-docs-")
        self.sock = os.path.join(self.dir, "braked.sock")
        args = [BRAKED, "--socket", self.sock, "--db",
                os.path.join(self.dir, "brake.db")]
        if config is not None:
            path = os.path.join(self.dir, "config.json")
            with open(path, "w") as f:
                f.write(config)
            args += ["--config", path]
        self.log = open(os.path.join(self.dir, "braked.log"), "ab")
        self.proc = subprocess.Popen(args, stdout=self.log, stderr=self.log,
                                     stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while True:
            if self.proc.poll() is not None:
                self.log.close()
                raise RuntimeError("braked exited: " + self.tail())
            try:
                self.conn = Conn(self.sock)
                break
            except OSError:
                if time.monotonic() > deadline:
                    self.proc.kill()
                    self.proc.wait()
                    self.log.close()
                    raise RuntimeError("braked did not start: " + self.tail())
                time.sleep(0.01)

    def tail(self) -> str:
        with open(os.path.join(self.dir, "braked.log"), errors="replace") as f:
            return f.read()[-2000:]

    def close(self):
        self.conn.close()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


class Conn:
    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.settimeout(10)
        try:
            self.sock.connect(path)
        except OSError:
            self.sock.close()
            raise
        self.file = self.sock.makefile("rb")
        self.next_id = 1

    def send(self, request: dict):
        self.sock.sendall(json.dumps(request).encode() + b"\n")

    def recv(self) -> dict:
        line = self.file.readline()
        if not line:
            raise AssertionError("braked closed the connection")
        return json.loads(line)

    def call(self, op: str, **fields) -> dict:
        req = {"id": self.next_id, "op": op}
        self.next_id += 1
        req.update(fields)
        self.send(req)
        reply = self.recv()
        assert reply.get("id") == req["id"], (req, reply)
        return reply

    def pipeline(self, requests):
        data = b""
        for r in requests:
            data += json.dumps(r).encode() + b"\n"
        self.sock.sendall(data)
        return [self.recv() for _ in requests]

    def close(self):
        self.file.close()
        self.sock.close()


def ok(test, reply, what=""):
    test.assertTrue(reply.get("ok"), "%s: %s" % (what, reply))
    return reply


# ---- every JSON block, every marked policy ------------------------------------

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

    def test_links_resolve(self):
        """Relative links in the checked docs name files that exist and
        headings that exist (GitHub's anchors)."""
        def slugs(path):
            out = set()
            for line in read(path).splitlines():
                m = re.match(r"^#+\s+(.*)$", line)
                if m:
                    slug = re.sub(r"[^\w\- ]", "", m.group(1).lower())
                    out.add(slug.replace(" ", "-"))
            return out

        for doc in CHECKED + ["OPERATIONS.md"]:
            here = os.path.join(DOCS, doc)
            for target in re.findall(r"\]\(([^)\s]+)\)", read(here)):
                if re.match(r"^[a-z]+:", target):
                    continue  # http:, mailto:
                path, _, anchor = target.partition("#")
                full = os.path.normpath(os.path.join(DOCS, path)) if path \
                    else here
                self.assertTrue(os.path.exists(full) or
                                path.startswith("../../shared/"),
                                "%s: %s" % (doc, target))
                if anchor and os.path.exists(full):
                    self.assertIn(anchor, slugs(full), "%s: %s" % (doc, target))

    def test_readme_links_the_docs(self):
        readme = read(os.path.join(ROOT, "README.md"))
        for doc in CHECKED + ["OPERATIONS.md", "DESIGN.md",
                              "PROTOCOL-ADDITIONS.md"]:
            self.assertIn("(docs/%s)" % doc, readme, doc)


class DaemonCase(unittest.TestCase):
    """Each test gets a fresh braked: self.d, and a connection self.c."""

    def setUp(self):
        self.d = Daemon()
        self.c = self.d.conn

    def tearDown(self):
        self.d.close()


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


# ---- the cookbook's recipes ---------------------------------------------------

class RecipesTest(DaemonCase):
    def set_policy(self, recipe):
        for args, b in marked("COOKBOOK.md", "policy"):
            if args.get("recipe") == recipe:
                (policy,) = b.values()
                return ok(self, self.c.call("policy.set", scope=args["scope"],
                                            **policy), b.where())
        self.fail("COOKBOOK.md: no policy for recipe " + recipe)

    def set_prices(self, recipe):
        b = recipe_block("prices", recipe)
        ok(self, self.c.call("prices.set", **b.values()[0]), b.where())

    def acquire(self, **fields):
        return ok(self, self.c.call("acquire", **fields))

    def granted(self, **fields):
        r = self.acquire(**fields)
        self.assertTrue(r["granted"], r)
        return r

    def denied(self, reason, **fields):
        r = self.acquire(**fields)
        self.assertFalse(r["granted"], r)
        self.assertEqual(r["reason"], reason, r)
        return r

    def matches_doc(self, recipe, reply):
        """The reply the doc shows has the same fields and the same reason,
        scope, limit, cause and shadow as the one braked gave."""
        b = recipe_block("reply", recipe)
        (doc,) = b.values()
        if SHOW:
            print("\n%s\n%s" % (b.where(), json.dumps(reply)))
        self.assertEqual(sorted(set(doc) - {"id"}), sorted(set(reply) - {"id"}),
                         "%s: fields differ from %s" % (b.where(), reply))
        for k in ("ok", "granted", "reason", "scope", "limit", "cause",
                  "shadow"):
            self.assertEqual(doc.get(k), reply.get(k),
                             "%s: %s differs from %s" % (b.where(), k, reply))
        self.assertEqual(doc.get("retry_after_ms") is None,
                         reply.get("retry_after_ms") is None, b.where())

    def test_1_provider_tier(self):
        self.set_policy("tier")
        who = dict(user="alice", task="t-1", resource="openai")
        self.granted(tokens=25000, **who)
        r = self.denied("rate_limited", tokens=6000, **who)
        self.assertEqual((r["scope"], r["limit"]), ("resource:openai", "tpm"))
        self.assertTrue(0 < r["retry_after_ms"] <= 60000, r)
        self.matches_doc("tier", r)
        # 500 requests a minute: 499 more pass, the next one does not.
        replies = self.c.pipeline(
            [dict(op="acquire", id=i, **who) for i in range(499)])
        self.assertTrue(all(x["granted"] for x in replies))
        r = self.denied("rate_limited", **who)
        self.assertEqual(r["limit"], "rpm")
        # A single estimate above the tier can never pass.
        r = self.denied("too_large", tokens=30001, user="bob", task="t-2",
                        resource="openai")
        self.assertIsNone(r["retry_after_ms"])

    def test_2_daily_usd_cap(self):
        self.set_prices("daily-usd")
        self.set_policy("daily-usd")
        big = self.granted(user="alice", task="t-1", model="gpt-4o",
                           tokens=400000)                      # $4.00 reserved
        self.assertAlmostEqual(big["remaining"]["usd"], 1.0)
        r = self.denied("cost_cap", user="alice", task="t-2", model="gpt-4o",
                        tokens=200000)                         # $2.00 more
        self.assertEqual((r["scope"], r["limit"]), ("user:alice", "daily-usd"))
        self.assertTrue(0 < r["retry_after_ms"] <= 86400000, r)
        self.matches_doc("daily-usd", r)
        # Every user has a cap of their own.
        self.granted(user="bob", task="t-3", model="gpt-4o", tokens=200000)
        # The commit prices the split exactly and refunds the rest.
        c = ok(self, self.c.call("commit", lease=big["lease"],
                                 input_tokens=300000, output_tokens=10000))
        self.assertAlmostEqual(c["charged_usd"], 0.85)
        self.granted(user="alice", task="t-2", model="gpt-4o", tokens=200000)
        # A reservation above the whole cap; an acquire without a model.
        r = self.denied("too_large", user="carol", task="t-4", model="gpt-4o",
                        tokens=600000)
        self.assertIsNone(r["retry_after_ms"])
        self.granted(user="alice", task="t-5", tokens=10**6)
        r = self.c.call("acquire", user="alice", task="t-6", model="unpriced",
                        tokens=1)
        self.assertEqual(r["error"]["code"], "bad_request", r)

    def test_3_task_tree(self):
        self.set_policy("task-tree")
        root = self.granted(user="alice", task="run-1", tokens=1000)
        ok(self, self.c.call("commit", lease=root["lease"], tokens=1000))
        sub = self.granted(user="alice", task="run-1.search", parent="run-1",
                           tokens=150000)
        ok(self, self.c.call("commit", lease=sub["lease"], tokens=150000))
        r = self.denied("quota_exhausted", user="alice", task="run-1.write",
                        parent="run-1", tokens=60000)
        self.assertEqual((r["scope"], r["limit"]), ("task:run-1", "task-tokens"))
        self.assertIsNone(r["retry_after_ms"])
        self.matches_doc("task-tree", r)
        # A denied first acquire recorded nothing: the parent may be named again.
        self.granted(user="alice", task="run-1.write", parent="run-1",
                     tokens=40000)
        # The parent must exist and belong to the same user.
        r = self.c.call("acquire", user="alice", task="x", parent="nope")
        self.assertEqual(r["error"]["code"], "bad_request", r)
        r = self.c.call("acquire", user="bob", task="y", parent="run-1")
        self.assertEqual(r["error"]["code"], "forbidden", r)

    def test_4_loop_breaker(self):
        self.set_policy("loop")
        who = dict(user="alice", task="t-42", resource="tool:search")
        for _ in range(5):
            lease = self.granted(fingerprint="9f2c41d07a5e", **who)["lease"]
            ok(self, self.c.call("commit", lease=lease))
        r = self.denied("breaker_open", fingerprint="9f2c41d07a5e", **who)
        self.assertEqual((r["scope"], r["limit"], r["cause"]),
                         ("task:t-42", "breaker", "loop"))
        self.assertTrue(290000 < r["retry_after_ms"] <= 300000, r)
        self.matches_doc("loop", r)
        self.denied("breaker_open", fingerprint="0000aaaa", **who)
        self.granted(user="alice", task="t-43", resource="tool:search",
                     fingerprint="9f2c41d07a5e")
        listed = ok(self, self.c.call("breaker.list"))["breakers"]
        self.assertEqual([b["scope"] for b in listed], ["task:t-42"])
        ok(self, self.c.call("breaker.reset", scope="task:t-42"))
        self.granted(fingerprint="0000aaaa", **who)

    def test_5_warmup(self):
        self.set_policy("warmup")
        who = dict(user="alice", task="t-7", resource="postgres")
        first = self.granted(**who)
        r = self.denied("rate_limited", **who)
        self.assertEqual((r["scope"], r["limit"]), ("resource:postgres", "warm"))
        self.assertTrue(0 < r["retry_after_ms"] <= 60, r)   # cold: 3 / 50 s
        self.matches_doc("warmup", r)
        ok(self, self.c.call("commit", lease=first["lease"]))
        # Cold, it admits far fewer than 50 in a second ("about 17"): 40
        # waiting acquires, each committed as soon as granted.
        self.c.sock.settimeout(10)
        reqs = [dict(op="acquire", id=1000 + i, wait_ms=1000, **who)
                for i in range(40)]
        self.c.sock.sendall(b"".join(json.dumps(x).encode() + b"\n"
                                     for x in reqs))
        grants, answered = 0, 0
        while answered < len(reqs):
            reply = self.c.recv()
            if 1000 <= reply.get("id", 0) < 1000 + len(reqs):
                answered += 1
                if reply.get("granted"):
                    grants += 1
                    self.c.send({"op": "commit", "lease": reply["lease"],
                                 "id": 10 ** 6 + answered})
                else:
                    self.assertEqual(reply.get("reason"), "timeout", reply)
        self.assertTrue(3 <= grants <= 19, grants)

    def test_6_shadow(self):
        self.set_policy("shadow")
        replies = self.c.pipeline([dict(op="acquire", id=i, user="alice",
                                        task="t-1") for i in range(60)])
        self.assertTrue(all(r["granted"] and "shadow" not in r
                            for r in replies))
        r = self.granted(user="alice", task="t-1")
        self.assertEqual(r["shadow"], ["user:alice/rpm"])
        self.matches_doc("shadow", r)
        status = ok(self, self.c.call("status", user="alice"))
        (limit,) = status["limits"]
        self.assertEqual((limit["shadow"], limit["used"], limit["limit"]),
                         (True, 61, 60))
        self.set_policy("shadow-enforced")
        r = self.denied("rate_limited", user="alice", task="t-1")
        self.assertEqual(r["limit"], "rpm")
        self.granted(user="bob", task="t-2")

    def test_brakectl_commands_run(self):
        """Every ```sh block of the cookbook runs against braked: each
        brakectl command exits 0 (or 3, denied). LEASE stands for the lease of
        the last granted acquire."""
        wrapper = r'''
brakectl() {
  out=$("$BRAKECTL" "$@"); rc=$?
  printf '%s\n' "$out"
  case "$out" in "lease "*) LEASE=${out#lease }; LEASE=${LEASE%%$'\n'*};; esac
  if [ $rc -ne 0 ] && [ $rc -ne 3 ]; then
    echo "FAILED ($rc): brakectl $*" >&2; exit 1
  fi
}
'''
        n = 0
        for b in blocks("COOKBOOK.md"):
            if b.info != "sh":
                continue
            script = wrapper + re.sub(r"\bLEASE\b", '"$LEASE"', b.text)
            env = dict(os.environ, BRAKE_SOCKET=self.d.sock, BRAKECTL=BRAKECTL)
            r = subprocess.run(["bash", "-c", script], env=env, text=True,
                               capture_output=True, timeout=30)
            self.assertEqual(r.returncode, 0, "%s: %s%s" % (
                b.where(), r.stdout[-1000:], r.stderr[-1000:]))
            n += b.text.count("brakectl ")
        self.assertGreaterEqual(n, 20)

    def test_combined_task_policy(self):
        self.set_policy("combined")
        p = ok(self, self.c.call("policy.get", scope="task:*"))["policy"]
        self.assertEqual([l["name"] for l in p["limits"]], ["task-tokens"])
        self.assertEqual(p["breaker"]["loop"]["repeats"], 5)


# ---- the protocol reference ---------------------------------------------------

def ref_text() -> str:
    return read(os.path.join(DOCS, "PROTOCOL-REFERENCE.md"))


def op_sections():
    """{op: [field rows as dicts]} from the ### sections of the reference."""
    out = {}
    for heading, rows in tables(ref_text()):
        if rows[0][:2] == ["field", "type"] and heading.split()[0] in \
                ops_from_help():
            op = heading.split()[0]
            head = rows[0]
            out[op] = [dict(zip(head, r)) for r in rows[1:]]
    return out


_HELP = None


def ops_from_help():
    """[(op, admin, help)] from braked --help-ops (the ops table)."""
    global _HELP
    if _HELP is None:
        text = subprocess.run([BRAKED, "--help-ops"], check=True,
                              capture_output=True, text=True).stdout
        _HELP = {}
        for line in text.splitlines():
            m = re.match(r"^(\S+)( \(admin\))?: (.*)$", line)
            assert m, "unexpected --help-ops line: " + line
            _HELP[m.group(1)] = (bool(m.group(2)), m.group(3))
    return _HELP


def ops_cc_fields():
    """{op: [field names]} from the kOps table in daemon/ops.cc."""
    src = read(os.path.join(ROOT, "daemon", "ops.cc"))
    start = src.index("const std::vector<Dispatcher::Op> kOps = {")
    end = src.index("\n};", start)
    table = src[start:end]
    out = {}
    parts = re.split(r'\n    \{"([a-z.]+)",', table)
    for i in range(1, len(parts), 2):
        op, body = parts[i], parts[i + 1]
        fields = re.findall(r'\{"(\w+)", FieldKind::', body)
        if "kScopeField" in body:
            fields.insert(0, "scope")
        out[op] = fields
    return out


def parse_type(cell: str):
    """('int', lo, hi) | ('number', lo, hi) | ('enum', [choices]) | (kind,)"""
    t = code(cell)
    m = re.match(r"^integer (\d+)\.\.(\d+)", t)
    if m:
        return ("int", int(m.group(1)), int(m.group(2)))
    m = re.match(r"^number ([\d.]+)\.\.([\d.]+)", t)
    if m:
        return ("number", float(m.group(1)), float(m.group(2)))
    m = re.match(r"^one of (.*)$", t)
    if m:
        return ("enum", [c.strip() for c in m.group(1).split(",")])
    m = re.match(r"^(name|scope|string|object|array|boolean)\b", t)
    if m:
        return (m.group(1),)
    raise AssertionError("unknown type in PROTOCOL-REFERENCE.md: " + cell)


def sample(t):
    """A valid value of type t."""
    kind = t[0]
    return {"int": lambda: t[1], "number": lambda: t[1],
            "enum": lambda: t[1][0], "name": lambda: "docs",
            "scope": lambda: "global", "string": lambda: "docs-lease",
            "object": lambda: {}, "array": lambda: [],
            "boolean": lambda: False}[kind]()


class ReferenceTest(unittest.TestCase):
    maxDiff = None

    @classmethod
    def setUpClass(cls):
        cls.d = Daemon()
        cls.c = cls.d.conn

    @classmethod
    def tearDownClass(cls):
        cls.d.close()

    def test_op_list_matches_help_ops(self):
        summary = None
        for heading, rows in tables(ref_text()):
            if rows[0] == ["op", "admin", "what"]:
                summary = {code(r[0]): (r[1] == "yes", r[2]) for r in rows[1:]}
        self.assertIsNotNone(summary, "no | op | admin | what | table")
        self.assertEqual(summary, ops_from_help())

    def test_fields_match_ops_table(self):
        sections = op_sections()
        for op, fields in ops_cc_fields().items():
            documented = [code(r["field"]) for r in sections.get(op, [])]
            self.assertEqual(sorted(documented), sorted(fields), op)

    def probe(self, op, base, field, value):
        req = dict(base)
        req[field] = value
        r = self.c.call(op, **req)
        self.assertFalse(r.get("ok"), (op, field, value, r))
        self.assertEqual(r["error"]["code"], "bad_request", (op, field, r))
        msg = r["error"]["message"]
        return msg

    def check_field(self, call, prefix, field, t, required):
        """`call(field, value|MISSING)` returns the error message."""
        name = prefix + field
        kind = t[0]
        if required:
            self.assertEqual(call(field, MISSING), name + ": is required")
        if kind == "int":
            self.assertEqual(call(field, "x"),
                             "%s: must be an integer between %d and %d"
                             % (name, t[1], t[2]))
        elif kind == "number":
            msg = call(field, 1e300)
            m = re.match(re.escape(name) +
                         r": must be (?:a number )?between (\S+) and (\S+)$", msg)
            self.assertTrue(m, msg)
            self.assertEqual((float(m.group(1)), float(m.group(2))),
                             (t[1], t[2]), name)
        elif kind == "enum":
            msg = call(field, "zzz")
            m = re.match(re.escape(name) + r": must be (?:one of )?(.*)$", msg)
            self.assertTrue(m, msg)
            got = re.split(r",\s*|\s+or\s+", m.group(1))
            self.assertEqual(got, t[1], name)
        elif kind == "name":
            self.assertEqual(call(field, ""), name + ": must not be empty")
        elif kind == "scope":
            self.assertTrue(call(field, "bogus").startswith(
                name + ": must be global, user:NAME"))
        elif kind == "string":
            self.assertEqual(call(field, ""), name + ": must be a non-empty "
                             "string of at most 256 bytes")
        elif kind == "object":
            self.assertEqual(call(field, []), name + ": must be an object")
        elif kind == "array":
            self.assertEqual(call(field, {}), name + ": must be an array")
        elif kind == "boolean":
            self.assertEqual(call(field, 1), name + ": must be true or false")

    def test_op_fields_types_and_bounds(self):
        n = 0
        for op, rows in op_sections().items():
            types = {code(r["field"]): parse_type(r["type"]) for r in rows}
            required = {code(r["field"]): r["required"] == "yes" for r in rows}
            base = {f: sample(types[f]) for f in types if required[f]}

            def call(field, value, op=op, base=base):
                req = dict(base)
                if value is MISSING:
                    req.pop(field, None)
                else:
                    req[field] = value
                r = self.c.call(op, **req)
                self.assertEqual(r.get("error", {}).get("code"), "bad_request",
                                 (op, field, value, r))
                return r["error"]["message"]

            for f, t in types.items():
                self.check_field(call, "", f, t, required[f])
                n += 1
        self.assertGreater(n, 30)

    def limit_rows(self):
        for heading, rows in tables(ref_text()):
            if heading == "LIMIT":
                return [dict(zip(rows[0], r)) for r in rows[1:]]
        self.fail("no LIMIT table")

    def test_limit_fields(self):
        rows = self.limit_rows()
        common = {code(r["field"]): r for r in rows if r["algorithm"] == "(all)"}
        algos = parse_type(common["algorithm"]["type"])[1]
        # The fields each algorithm takes, from daemon/policy_codec.cc.
        src = read(os.path.join(ROOT, "daemon", "policy_codec.cc"))
        codec = {}
        for camel, fields in re.findall(
                r"\{Algorithm::k(\w+), \{([^}]*)\}\}", src):
            snake = re.sub(r"(?<!^)([A-Z])", r"_\1", camel).lower()
            codec[snake] = sorted(re.findall(r'"(\w+)"', fields))
        self.assertEqual(sorted(codec), sorted(algos))
        for algo in algos:
            own = {code(r["field"]): r for r in rows
                   if code(r["algorithm"]) == algo}
            self.assertEqual(sorted(own), codec[algo], algo)
            for usd in ([False, True] if algo in
                        ("sliding_log", "fixed_window", "quota") else [False]):
                types = {}
                for f, r in own.items():
                    cell = r["type"]
                    m = re.search(r"\(usd: (.*)\)", cell)
                    if usd and m:
                        cell = m.group(1)
                    types[f] = parse_type(re.sub(r"\s*\(usd:.*\)", "", cell))
                required = {f: r["required"] == "yes" for f, r in own.items()}
                base = {"name": "x", "resource": "usd" if usd else "requests",
                        "algorithm": algo}
                base.update({f: sample(types[f]) for f in own if required[f]})
                if algo == "quota":
                    base["period"] = "day"

                def call(field, value, base=base):
                    limit = dict(base)
                    if value is MISSING:
                        limit.pop(field, None)
                    else:
                        limit[field] = value
                    r = self.c.call("policy.set", scope="global",
                                    limits=[limit])
                    self.assertEqual(r.get("error", {}).get("code"),
                                     "bad_request", (limit, r))
                    return r["error"]["message"]

                for f, t in types.items():
                    self.check_field(call, "limits[0].", f, t, required[f])
                # Defaults, from the canonical policy.
                canonical = ok(self, self.c.call(
                    "policy.set", scope="global", limits=[base]))
                got = canonical["policy"]["limits"][0]
                for f, r in own.items():
                    default = code(r["default"])
                    if not default:
                        continue
                    if default == "rate":
                        self.assertEqual(got[f], got["rate"], (algo, f))
                    elif default == "false":
                        self.assertFalse(got.get(f, False), (algo, f))
                    else:
                        self.assertEqual(got[f], float(default), (algo, f))
            # An unknown field is refused.
            msg = self.c.call("policy.set", scope="global", limits=[
                dict(name="x", resource="requests", algorithm=algo,
                     burts=1)])["error"]["message"]
            self.assertEqual(msg, "limits[0].burts: not a field of " + algo)
        for f, r in common.items():
            t = parse_type(r["type"])
            base = {"name": "x", "resource": "requests",
                    "algorithm": "concurrency", "limit": 1}

            def call(field, value, base=base):
                limit = dict(base)
                if value is MISSING:
                    limit.pop(field, None)
                else:
                    limit[field] = value
                return self.c.call("policy.set", scope="global",
                                   limits=[limit])["error"]["message"]

            self.check_field(call, "limits[0].", f, t, r["required"] == "yes")
        msg = self.c.call("policy.set", scope="global", limits=[
            dict(name="x" * 65, resource="requests", algorithm="concurrency",
                 limit=1)])["error"]["message"]
        self.assertEqual(msg, "limits[0].name: longer than 64 bytes")
        self.c.call("policy.delete", scope="global")

    def test_breaker_fields(self):
        rows = None
        for heading, t in tables(ref_text()):
            if heading == "BREAKER":
                rows = [dict(zip(t[0], r)) for r in t[1:]]
        self.assertIsNotNone(rows)
        doc = {code(r["field"]): r for r in rows}
        # The fields, from daemon/breaker_codec.cc.
        src = read(os.path.join(ROOT, "daemon", "breaker_codec.cc"))
        codec = []
        top = re.search(r"OnlyFields\(j,\s*\{([^}]*)\}", src).group(1)
        rules = dict(re.findall(
            r'field \+ "\.(\w+)";\s*if \(Status s = OnlyFields\(\*it,\s*'
            r'\{([^}]*)\}', src))
        for f in re.findall(r'"(\w+)"', top):
            if f in rules:
                codec += [f + "." + g for g in re.findall(r'"(\w+)"', rules[f])]
            else:
                codec.append(f)
        self.assertEqual(sorted(doc), sorted(codec))
        breaker = {}
        for f, r in doc.items():
            t = parse_type(re.sub(r",.*$", "", r["type"]))

            def call(field, value):
                b = {}
                if "." in field:
                    rule, sub = field.split(".")
                    b[rule] = {sub: value}
                else:
                    b[field] = value
                r = self.c.call("policy.set", scope="task:*", breaker=b)
                return r["error"]["message"]

            if "." in f:
                rule, sub = f.split(".")
                self.check_field(lambda _, v, rule=rule, sub=sub:
                                 call(rule + "." + sub, v),
                                 "breaker." + rule + ".", sub, t, False)
                breaker[rule] = {}
            else:
                self.check_field(call, "breaker.", f, t, False)
        canonical = ok(self, self.c.call("policy.set", scope="task:*",
                                         breaker=breaker))["policy"]["breaker"]
        for f, r in doc.items():
            got = canonical
            for part in f.split("."):
                got = got[part]
            self.assertEqual(got, float(code(r["default"])), f)
        self.c.call("policy.delete", scope="task:*")

    def test_reasons_and_error_codes(self):
        engine = read(os.path.join(ROOT, "budget", "engine.cc"))
        fn = engine[engine.index("std::string_view ReasonName"):]
        fn = fn[:fn.index("\n}\n")]
        reasons = re.findall(r'return "(\w+)";', fn)
        status = read(os.path.join(ROOT, "common", "status.cc"))
        codes = [c for c in re.findall(r'return "(\w+)";', status)
                 if c not in ("ok", "internal")] + ["internal"]
        found = {}
        for heading, rows in tables(ref_text()):
            if heading in ("Reasons", "Error codes"):
                found[heading] = sorted(set(code(r[0]) for r in rows[1:]))
        self.assertEqual(found.get("Reasons"), sorted(set(reasons)))
        self.assertEqual(found.get("Error codes"), sorted(set(codes)))

    def test_examples_replay(self):
        """Replays every example in order against a fresh braked."""
        d = Daemon()
        try:
            c = d.conn
            text_blocks = blocks("PROTOCOL-REFERENCE.md")
            for b in text_blocks:
                if b.marker == "prices":
                    ok(self, c.call("prices.set", **b.values()[0]), b.where())
                elif b.marker and b.marker.startswith("policy:"):
                    ok(self, c.call("policy.set", scope=b.marker.split()[1],
                                    **b.values()[0]), b.where())
            leases = {}
            helper = 0
            n = 0
            for b in text_blocks:
                if b.marker != "example":
                    continue
                request, expected = b.values()
                if "lease" in request:
                    lease = request["lease"]
                    if lease in leases:
                        request["lease"] = leases[lease]
                    elif re.match(r"^[0-9a-f]{12}-\d+$", lease):
                        helper += 1
                        r = ok(self, c.call("acquire", user="docs-helper",
                                            task="h%d" % helper))
                        request["lease"] = r["lease"]
                c.send(request)
                got = c.recv()
                where = b.where()
                if SHOW:
                    print("\n%s\n%s" % (where, json.dumps(got)))
                self.assertEqual(got.get("id"), request.get("id"), where)
                self.assertEqual(sorted(expected), sorted(got),
                                 "%s: got %s" % (where, got))
                if "error" in expected:
                    self.assertEqual(expected["error"]["code"],
                                     got["error"]["code"], where)
                    self.assertEqual(expected["error"]["message"],
                                     got["error"]["message"], where)
                for k in ("granted", "reason", "scope", "limit", "cause",
                          "deleted", "duplicate", "by"):
                    self.assertEqual(expected.get(k), got.get(k),
                                     "%s: %s in %s" % (where, k, got))
                for k, v in expected.items():
                    if isinstance(v, dict) and isinstance(got.get(k), dict) \
                            and k != "error":
                        self.assertEqual(sorted(v), sorted(got[k]),
                                         "%s: %s in %s" % (where, k, got))
                    if isinstance(v, list) and v and isinstance(v[0], dict):
                        self.assertTrue(got[k], "%s: %s empty" % (where, k))
                        self.assertEqual(sorted(v[0]), sorted(got[k][0]),
                                         "%s: %s[0] in %s" % (where, k, got))
                if "lease" in expected:
                    leases[expected["lease"]] = got["lease"]
                n += 1
            self.assertGreaterEqual(n, 20)
        finally:
            d.close()


MISSING = object()


# ---- OPERATIONS.md's config table --------------------------------------------

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
        for heading, rows in tables(read(os.path.join(DOCS, "OPERATIONS.md"))):
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


if __name__ == "__main__":
    if not BRAKED or not os.access(BRAKED, os.X_OK):
        print("docs_test: no braked (set BRAKED)", file=sys.stderr)
        sys.exit(1)
    unittest.main()
