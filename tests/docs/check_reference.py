"""Checks on PROTOCOL.md against the code and a real braked
(ReferenceTest): the op list and each op's fields match the ops table; every
documented type, bound, default and error message is what braked enforces and
says, for ops, LIMIT and BREAKER fields; the reasons and error codes match the
code; and the examples replay, in order, with the documented replies.
"""

import json
import os
import re
import unittest

from braked_daemon import Daemon, ok
from doc_markers import blocks, code, tables
from docs_env import ROOT, SHOW, read
from reference_tables import (MISSING, op_sections, ops_cc_fields,
                              ops_from_help, parse_type, ref_text, sample)


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
            text_blocks = blocks("PROTOCOL.md")
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
