"""brake: ask braked "may I?" before each LLM or tool call.

    import brake

    client = brake.Client()                       # BRAKE_SOCKET or the default
    with client.acquire("alice", "t-42", tokens=1200) as lease:
        reply = call_the_model()
        lease.commit(input_tokens=reply.usage.prompt_tokens,
                     output_tokens=reply.usage.completion_tokens)

See clients/python/README.md.
"""

from .client import RETRY_AFTER_SEND, Client, Lease, default_socket_path
from .errors import (BadJson, BadRequest, BrakeError, Denied, Error,
                     Forbidden, Internal, LineTooLong, TooManyConnections,
                     Unavailable, UnknownLease, UnknownOp, Unreachable,
                     error_from_reply)
from .fingerprint import canonical_json, fingerprint

__version__ = "0.1.0"

__all__ = [
    "Client", "Lease", "default_socket_path", "RETRY_AFTER_SEND",
    "fingerprint", "canonical_json", "Error", "Denied", "BrakeError",
    "BadJson", "BadRequest", "UnknownOp", "LineTooLong", "UnknownLease",
    "Forbidden", "Internal", "TooManyConnections", "Unavailable",
    "Unreachable", "error_from_reply",
]
