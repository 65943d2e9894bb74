"""brake: ask braked "may I?" before each LLM or tool call.

    import brake

    client = brake.Client()                       # BRAKE_SOCKET or the default
    with client.acquire("alice", "t-42", tokens=1200, model="gpt-4o") as lease:
        resp = openai_client.chat.completions.create(...)
        lease.commit_usage(resp)

On asyncio: ``brake.AsyncClient``, the same API awaited. See the package
README (clients/python/README.md).
"""

from ._version import __version__
from .aio import AsyncClient, AsyncLease
from .client import RETRY_AFTER_SEND, Client, Lease, default_socket_path
from .errors import (BadJson, BadRequest, BrakeError, BreakerOpen,
                     ConcurrencyLimited, CostCap, Denied, Error, Forbidden,
                     Internal, LineTooLong, QueueFull, QuotaExhausted,
                     RateLimited, Reserved, TooLarge, TooManyConnections,
                     Unavailable,
                     UnknownLease, UnknownOp, Unreachable, WaitTimedOut,
                     denied_from_reply, error_from_reply)
from .fingerprint import canonical_json, fingerprint
from .usage import Usage, UsageTally, usage_of

__all__ = [
    "__version__",
    "Client", "Lease", "AsyncClient", "AsyncLease", "default_socket_path",
    "RETRY_AFTER_SEND", "fingerprint", "canonical_json",
    "Usage", "UsageTally", "usage_of",
    "Error", "Denied", "RateLimited", "QuotaExhausted", "CostCap", "Reserved",
    "BreakerOpen", "ConcurrencyLimited", "QueueFull", "WaitTimedOut",
    "TooLarge", "BrakeError", "BadJson", "BadRequest", "UnknownOp",
    "LineTooLong", "UnknownLease", "Forbidden", "Internal",
    "TooManyConnections", "Unavailable", "Unreachable", "error_from_reply",
    "denied_from_reply",
]
