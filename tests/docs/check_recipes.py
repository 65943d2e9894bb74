"""Checks on COOKBOOK.md against a real braked (RecipesTest): each recipe's
scenario behaves as its text says and gets the reply its <!-- reply: ID -->
block shows, and the brakectl commands of every ```sh block run.
"""

import json
import os
import re
import subprocess

from braked_daemon import Conn, DaemonCase, ok
from doc_markers import blocks, marked, recipe_block
from docs_env import BRAKECTL, ROOT, SHOW, read


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
        r = self.denied("reserved", user="alice", task="t-2", model="gpt-4o",
                        tokens=200000)                         # $2.00 more
        self.assertEqual((r["scope"], r["limit"]), ("user:alice", "daily-usd"))
        self.assertAlmostEqual(r["held"], 4.0)
        self.assertTrue(0 < r["retry_after_ms"] <= 600000, r)  # the lease TTL
        self.matches_doc("daily-usd", r)
        # Every user has a cap of their own.
        self.granted(user="bob", task="t-3", model="gpt-4o", tokens=200000)
        # The commit prices the split exactly and refunds the rest.
        c = ok(self, self.c.call("commit", lease=big["lease"],
                                 input_tokens=300000, output_tokens=10000))
        self.assertAlmostEqual(c["charged_usd"], 0.85)
        second = self.granted(user="alice", task="t-2", model="gpt-4o",
                              tokens=200000)
        # Spent: $0.85 + $4.00 settled; $0.20 more does not fit what is left.
        ok(self, self.c.call("commit", lease=second["lease"], input_tokens=0,
                             output_tokens=400000))
        r = self.denied("cost_cap", user="alice", task="t-2", model="gpt-4o",
                        tokens=20000)
        self.assertTrue(0 < r["retry_after_ms"] <= 86400000, r)
        self.matches_doc("daily-usd-spent", r)
        # A reservation above the whole cap; an acquire without a model.
        r = self.denied("too_large", user="carol", task="t-4", model="gpt-4o",
                        tokens=600000)
        self.assertIsNone(r["retry_after_ms"])
        r = self.c.call("acquire", user="alice", task="t-5", tokens=10**6)
        self.assertEqual(r["error"]["code"], "bad_request", r)
        self.assertTrue(r["error"]["message"].startswith("model: "), r)
        self.assertIn("user:alice", r["error"]["message"])
        r = self.c.call("acquire", user="alice", task="t-6", model="unpriced",
                        tokens=1)
        self.assertEqual(r["error"]["code"], "bad_request", r)

    def test_8_team(self):
        self.set_prices("team")
        self.set_policy("team")
        # 49 agents' calls in flight hold all but $0.00506 of the $20.
        leases = [self.granted(user="team", task="agent-%d" % i,
                               model="gpt-4o-mini", tokens=680100)["lease"]
                  for i in range(49)]
        r = self.denied("reserved", user="team", task="agent-49",
                        model="gpt-4o-mini", tokens=9000)
        self.assertEqual((r["scope"], r["limit"]), ("user:team", "team-daily"))
        self.assertTrue(0 < r["retry_after_ms"] <= 600000, r)
        self.matches_doc("team", r)
        # It waits instead; one call settles low, and it is granted.
        waiter = Conn(self.d.sock)
        try:
            waiter.send(dict(op="acquire", id="w", user="team", task="agent-49",
                             model="gpt-4o-mini", tokens=9000, wait_ms=5000))
            ok(self, self.c.call("commit", lease=leases[0], input_tokens=20000,
                                 output_tokens=1000))
            waited = waiter.recv()
            self.assertTrue(waited["granted"], waited)
        finally:
            waiter.close()

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

    def test_7_retry_storm(self):
        self.set_policy("storm")
        ok(self, self.c.call("prices.set", model="gpt-4o",
                             input_usd_per_mtok=2.5, output_usd_per_mtok=10))
        who = dict(user="alice", task="t-9", resource="anthropic",
                   model="gpt-4o", tokens=500)
        for _ in range(4):
            lease = self.granted(**who)["lease"]
            ok(self, self.c.call("commit", lease=lease, tokens=0,
                                 outcome="error"))
        r = self.denied("breaker_open", **who)
        self.assertEqual((r["scope"], r["limit"], r["cause"]),
                         ("resource:anthropic", "breaker", "errors"))
        self.assertTrue(29000 < r["retry_after_ms"] <= 30000, r)
        self.matches_doc("storm", r)
        # Another user's call to the provider is stopped too; another
        # provider is not.
        self.denied("breaker_open", **dict(who, user="bob", task="t-1"))
        self.granted(**dict(who, resource="openai"))
        ok(self, self.c.call("breaker.reset", scope="resource:anthropic"))
        lease = self.granted(**dict(who, task="t-10"))["lease"]
        ok(self, self.c.call("commit", lease=lease, tokens=0,
                             outcome="throttled", retry_after_ms=20000))
        r = self.denied("breaker_open", **dict(who, task="t-11"))
        self.assertEqual(r["cause"], "throttled")
        self.assertTrue(19000 < r["retry_after_ms"] <= 20000, r)

    def run_sh_blocks(self, doc, blocks_to_run, at_least):
        """Runs each ```sh block of `blocks_to_run` as pasted, in order, in
        one bash each, against this test's braked: every brakectl command in
        it exits 0 (or 3, denied), and so does the block."""
        wrapper = r'''
brakectl() {
  "$BRAKECTL" "$@"; rc=$?
  if [ $rc -ne 0 ] && [ $rc -ne 3 ]; then
    echo "FAILED ($rc): brakectl $*" | tee -a "$BRAKE_DOC_FAILS" >&2
  fi
  return $rc
}
'''
        fails = os.path.join(self.d.dir, "doc-fails")
        n = 0
        for b in blocks_to_run:
            env = dict(os.environ, BRAKE_SOCKET=self.d.sock, BRAKECTL=BRAKECTL,
                       BRAKE_DOC_FAILS=fails)
            r = subprocess.run(["bash", "-c", wrapper + b.text], env=env,
                               text=True, capture_output=True, timeout=30,
                               cwd=ROOT)
            failed = open(fails).read() if os.path.exists(fails) else ""
            self.assertEqual((r.returncode in (0, 3), failed), (True, ""),
                             "%s: %s%s" % (b.where(), r.stdout[-1000:],
                                           r.stderr[-1000:]))
            self.assertNotIn("Traceback", r.stderr, b.where())
            n += b.text.count("brakectl ")
        self.assertGreaterEqual(n, at_least, doc)

    def test_cookbook_shell_blocks_run_as_pasted(self):
        self.run_sh_blocks("COOKBOOK.md", [b for b in blocks("COOKBOOK.md")
                                           if b.info == "sh"], 20)

    def test_readme_quick_start_runs_as_pasted(self):
        readme = read(os.path.join(ROOT, "README.md")).splitlines()
        start = readme.index("## Quick start (five minutes)") + 1
        end = next(i for i in range(start, len(readme))
                   if readme[i].startswith("## "))
        quick = [b for b in blocks("../README.md")
                 if b.info == "sh" and start < b.line <= end]
        self.assertGreaterEqual(len(quick), 3)
        self.run_sh_blocks("README.md", quick, 5)

    def test_combined_task_policy(self):
        self.set_policy("combined")
        p = ok(self, self.c.call("policy.get", scope="task:*"))["policy"]
        self.assertEqual([l["name"] for l in p["limits"]], ["task-tokens"])
        self.assertEqual(p["breaker"]["loop"]["repeats"], 5)
