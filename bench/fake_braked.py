#!/usr/bin/env python3
"""A fake braked for testing brake-bench against braked's reply shapes.

Answers newline-delimited JSON on a Unix socket like PROTOCOL.md says braked
does (compact JSON, keys sorted as nlohmann::json prints them):
  acquire -> granted with a lease, or denied by a global sliding log of
             --limit grants per --window-ms ("rate_limited"), or "too_large"
             when tokens exceed --max-tokens
  commit  -> charged_tokens, duplicate on a second commit, unknown_lease
  ping    -> version
  other   -> unknown_op error
Test knobs: --error-every N answers every Nth acquire with ok:false
bad_request; --reorder answers each batch of pipelined requests read together
in reverse order (ids must be matched, not assumed in order); --close-after N
closes each connection after N requests (brake-bench must report it and exit
1). Stops on SIGINT/SIGTERM.
"""
import argparse
import asyncio
import collections
import json
import os
import signal
import time


def dumps(obj):
    return (json.dumps(obj, sort_keys=True, separators=(",", ":")) + "\n").encode()


class Fake:
    def __init__(self, args):
        self.args = args
        self.log = collections.deque()  # grant times, monotonic ms
        self.leases = {}  # lease -> committed reply or None
        self.next_lease = 0
        self.acquires = 0

    def acquire(self, req):
        self.acquires += 1
        rid = req.get("id")
        if self.args.error_every and self.acquires % self.args.error_every == 0:
            return {"id": rid, "ok": False,
                    "error": {"code": "bad_request", "message": "fake: injected error"}}
        for key in ("user", "task"):
            if not isinstance(req.get(key), str) or not req[key]:
                return {"id": rid, "ok": False,
                        "error": {"code": "bad_request", "message": key + ": required"}}
        tokens = req.get("tokens", 0)
        if tokens > self.args.max_tokens:
            return {"id": rid, "ok": True, "granted": False, "reason": "too_large",
                    "scope": "global", "limit": "tpm", "retry_after_ms": None}
        now = time.monotonic() * 1000
        while self.log and self.log[0] <= now - self.args.window_ms:
            self.log.popleft()
        if len(self.log) >= self.args.limit:
            retry = int(self.log[0] + self.args.window_ms - now) + 1
            return {"id": rid, "ok": True, "granted": False, "reason": "rate_limited",
                    "scope": "user:" + req["user"], "limit": "rps",
                    "retry_after_ms": max(retry, 0)}
        self.log.append(now)
        self.next_lease += 1
        lease = "l-%d" % self.next_lease
        self.leases[lease] = None
        return {"id": rid, "ok": True, "granted": True, "lease": lease, "waited_ms": 0}

    def commit(self, req):
        rid = req.get("id")
        lease = req.get("lease")
        if lease not in self.leases:
            return {"id": rid, "ok": False,
                    "error": {"code": "unknown_lease", "message": "lease: unknown"}}
        if self.leases[lease] is not None:
            return dict(self.leases[lease], id=rid, duplicate=True)
        reply = {"ok": True, "charged_tokens": req.get("tokens", 0), "charged_usd": 0.0}
        self.leases[lease] = reply
        return dict(reply, id=rid)

    def answer(self, line):
        try:
            req = json.loads(line)
        except ValueError:
            return {"ok": False, "error": {"code": "bad_json", "message": "not JSON"}}
        op = req.get("op")
        if op == "acquire":
            return self.acquire(req)
        if op == "commit":
            return self.commit(req)
        if op == "ping":
            return {"id": req.get("id"), "ok": True, "version": "0.0.0-fake"}
        return {"id": req.get("id"), "ok": False,
                "error": {"code": "unknown_op", "message": "op: unknown"}}

    async def serve(self, reader, writer):
        served = 0
        buf = b""
        try:
            while True:
                chunk = await reader.read(65536)
                if not chunk:
                    break
                buf += chunk
                *lines, buf = buf.split(b"\n")
                replies = []
                for line in lines:
                    if not line.strip():
                        continue
                    served += 1
                    if self.args.close_after and served > self.args.close_after:
                        writer.close()
                        return
                    replies.append(dumps(self.answer(line)))
                if self.args.reorder:
                    replies.reverse()
                writer.write(b"".join(replies))
                await writer.drain()
        except (ConnectionResetError, BrokenPipeError):
            pass
        finally:
            writer.close()


async def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--socket", required=True)
    p.add_argument("--limit", type=int, default=100)
    p.add_argument("--window-ms", type=int, default=1000)
    p.add_argument("--max-tokens", type=int, default=100000)
    p.add_argument("--error-every", type=int, default=0)
    p.add_argument("--close-after", type=int, default=0)
    p.add_argument("--reorder", action="store_true")
    args = p.parse_args()
    if os.path.exists(args.socket):
        os.unlink(args.socket)
    fake = Fake(args)
    server = await asyncio.start_unix_server(fake.serve, path=args.socket)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    async with server:
        await stop.wait()
    os.unlink(args.socket)


if __name__ == "__main__":
    asyncio.run(main())
