#!/usr/bin/env python3
"""Guard an OpenAI-style chat completion call with brake (no SDK: urllib).

Reserve an estimate of the call's tokens, make the call, then commit what the
response's ``usage`` says it really used. Works with any endpoint that speaks
the chat completions format (OpenAI, vLLM, llama.cpp, Ollama, a proxy...).

    # offline: the HTTP call is faked, brake is real
    python3 guard_chat.py --dry-run --user alice --task demo "Hello"

    # for real
    OPENAI_API_KEY=... python3 guard_chat.py --model gpt-4o-mini "Hello"
    python3 guard_chat.py --url http://localhost:8080/v1/chat/completions "Hi"

Exit codes: 0 answered, 3 denied by brake, 1 error.
"""

import argparse
import json
import os
import socket
import sys
import urllib.error
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                ".."))
import brake  # noqa: E402


def estimate_tokens(messages, max_tokens):
    """A rough guess: ~4 characters a token for the prompt, plus the cap on
    the answer. brake refunds (or charges) the difference at commit."""
    chars = sum(len(m.get("content", "")) for m in messages)
    return chars // 4 + 8 * len(messages) + max_tokens


def fake_post(url, body, headers, timeout):
    """Stands in for the HTTP call under --dry-run."""
    prompt = body["messages"][-1]["content"]
    return {"id": "chatcmpl-dry-run", "object": "chat.completion",
            "model": body["model"],
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant",
                                     "content": "(dry run) you said: "
                                                + prompt}}],
            "usage": {"prompt_tokens": len(prompt) // 4 + 9,
                      "completion_tokens": 12,
                      "total_tokens": len(prompt) // 4 + 21}}


def http_post(url, body, headers, timeout):
    req = urllib.request.Request(url, data=json.dumps(body).encode(),
                                 headers=headers, method="POST")
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        return json.load(resp)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("prompt", nargs="?", default="Say hello in five words.")
    ap.add_argument("--url",
                    default="https://api.openai.com/v1/chat/completions")
    ap.add_argument("--model", default="gpt-4o-mini")
    ap.add_argument("--max-tokens", type=int, default=256)
    ap.add_argument("--user", default=os.environ.get("USER", "me"))
    ap.add_argument("--task", default="chat-demo")
    ap.add_argument("--priced", action="store_true",
                    help="tell brake the model, so usd caps apply (the model "
                         "needs a price: brakectl prices set); under a usd "
                         "cap a call that names no model is refused unless "
                         "the model * has a price")
    ap.add_argument("--wait-ms", type=int, default=5000,
                    help="let brake queue the call this long when a rate "
                         "limit is hit")
    ap.add_argument("--socket", help="braked socket (default: BRAKE_SOCKET "
                                     "or the daemon's default)")
    ap.add_argument("--dry-run", action="store_true",
                    help="fake the HTTP call (offline); brake is still asked")
    args = ap.parse_args()

    client = brake.Client(args.socket)
    messages = [{"role": "user", "content": args.prompt}]
    body = {"model": args.model, "messages": messages,
            "max_tokens": args.max_tokens}
    headers = {"Content-Type": "application/json"}
    if os.environ.get("OPENAI_API_KEY"):
        headers["Authorization"] = "Bearer " + os.environ["OPENAI_API_KEY"]
    post = fake_post if args.dry_run else http_post

    try:
        lease = client.acquire(
            args.user, args.task,
            tokens=estimate_tokens(messages, args.max_tokens),
            model=args.model if args.priced else None,
            resource=urllib.parse.urlsplit(args.url).hostname or "llm",
            wait_ms=args.wait_ms)
    except brake.Denied as d:
        print("brake said no: %s" % d, file=sys.stderr)
        return 3

    # Leaving the block without a commit cancels the lease; an unexpected
    # exception commits it with outcome "error" (feeding the breakers).
    with lease:
        try:
            resp = post(args.url, body, headers, timeout=60)
        except urllib.error.HTTPError as e:
            if e.code == 429:  # the provider says "wait": tell brake
                retry = e.headers.get("Retry-After", "")
                lease.commit(tokens=0, outcome="throttled",
                             retry_after_ms=int(float(retry) * 1000)
                             if retry.replace(".", "", 1).isdigit() else None)
            else:
                lease.commit(tokens=0, outcome="error")
            print("HTTP %d from %s" % (e.code, args.url), file=sys.stderr)
            return 1
        except (socket.timeout, TimeoutError):
            lease.commit(tokens=0, outcome="timeout")
            print("timed out", file=sys.stderr)
            return 1
        usage = resp.get("usage") or {}
        settled = lease.commit(input_tokens=usage.get("prompt_tokens", 0),
                               output_tokens=usage.get("completion_tokens",
                                                       0))

    print(resp["choices"][0]["message"]["content"])
    print("brake: charged %d tokens, $%.6f (lease %s, waited %d ms)"
          % (settled["charged_tokens"], settled["charged_usd"], lease.id,
             lease.waited_ms))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except brake.BrakeError as e:
        print("brake: %s" % e, file=sys.stderr)
        sys.exit(1)
