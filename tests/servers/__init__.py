"""Small real HTTP servers on 127.0.0.1 that speak provider wire formats, for tests and benches."""

from tests.servers.batches import BatchPlan
from tests.servers.loopback import (
    Delay,
    LoopbackServer,
    MalformedArguments,
    MalformedBody,
    NoToolCall,
    RawArguments,
    Refusal,
    Reply,
    Sparse,
    Status,
)

__all__ = ["BatchPlan", "Delay", "LoopbackServer", "MalformedArguments", "MalformedBody", "NoToolCall", "RawArguments", "Refusal", "Reply", "Sparse", "Status"]
