#!/usr/bin/env python3
"""Guard an agent's tool loop with brake's loop breaker.

An agent that calls the same tool with the same arguments over and over is
stuck. Each tool call here asks brake first, with a fingerprint of the call
(tool name + canonical JSON of its arguments). With the policy

    task:*  breaker {"loop": {"repeats": 3, "window_ms": 60000}}

the third identical call in a task is the last one granted and trips the
task's breaker: the next acquire is denied with reason ``breaker_open`` and
cause ``loop``, and the loop stops.

    python3 guard_tool_loop.py [--socket PATH] [--user NAME]

The script sets the policies it needs on scopes of its own (needs the
daemon's admin uid, which the daemon's own uid always is), so that it runs on
a fresh daemon, after the README's Quick start or after the cookbook: the
loop breaker on its task (``task:tool-loop-...``, made up for the run) rather
than on ``task:*``, and, when the user has no policy of their own, a generous
rate on ``user:NAME`` so that ``user:*``'s rate limits (2 a second in the
Quick start) do not stop the demo before the loop does. It deletes both at
the end.
"""

import argparse
import os
import sys
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                ".."))
import brake  # noqa: E402

LOOP_BREAKER = {"loop": {"repeats": 3, "window_ms": 60000}}
USER_RATE = {"name": "demo-rate", "resource": "requests",
             "algorithm": "token_bucket", "rate": 100, "per_ms": 1000,
             "burst": 100}


def stuck_model(step, last_result):
    """A pretend LLM that keeps asking for the same search."""
    if step == 0:
        return ("search", {"query": "brake python client", "top_k": 3})
    if step == 1:
        return ("read_page", {"url": "https://example.com/brake"})
    # Stuck: the same call again and again (argument order shuffled, which
    # the fingerprint ignores).
    return ("search", {"top_k": 3, "query": "brake python client"})


def run_tool(name, arguments):
    return "%s(%s) -> 3 results" % (name, arguments)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--socket")
    ap.add_argument("--user", default=os.environ.get("USER", "me"))
    ap.add_argument("--max-steps", type=int, default=20)
    args = ap.parse_args()

    client = brake.Client(args.socket)
    task = "tool-loop-" + uuid.uuid4().hex[:8]
    own = ["task:" + task]
    client.policy_set("task:" + task, breaker=LOOP_BREAKER)
    if client.policy_get("user:" + args.user)["policy"] is None:
        own.append("user:" + args.user)
        client.policy_set("user:" + args.user, limits=[USER_RATE])
    try:
        result = None
        for step in range(args.max_steps):
            tool, arguments = stuck_model(step, result)
            fp = brake.fingerprint(tool, arguments)
            try:
                lease = client.acquire(args.user, task, resource=tool,
                                       fingerprint=fp)
            except brake.Denied as d:
                print("step %d: %s %s %s" % (step, tool, fp, d))
                if d.reason == "breaker_open" and d.cause == "loop":
                    print("stopped: the agent was stuck in a loop "
                          "(same call repeated); %d tool calls made" % step)
                    return 0
                return 3
            with lease:
                result = run_tool(tool, arguments)
                lease.commit()
            print("step %d: %s %s ok" % (step, tool, fp))
        print("never stopped: is the loop breaker set?")
        return 1
    finally:
        for scope in own:
            client.policy_delete(scope)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except brake.BrakeError as e:
        print("brake: %s" % e, file=sys.stderr)
        sys.exit(1)
