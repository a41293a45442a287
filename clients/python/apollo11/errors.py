"""Exceptions raised by the apollo11 client, executor and codec."""

from __future__ import annotations


class Apollo11Error(Exception):
    """Base class of every error this package raises."""


class ProtocolError(Apollo11Error):
    """A frame or message that breaks wire-v1, ours or the peer's."""


class MalformedError(ProtocolError, ValueError):
    """A payload that breaks wire-v1 section 2 (or a zero-length frame).

    ``reason`` says what is wrong and ``offset`` where, in payload bytes.
    A peer answers it with ``type=error code=malformed`` and closes.
    """

    code = "malformed"

    def __init__(self, reason: str, offset: int = 0) -> None:
        super().__init__(f"malformed payload at byte {offset}: {reason}")
        self.reason = reason
        self.offset = offset


class FrameTooLargeError(ProtocolError):
    """A frame longer than the maximum payload size (wire-v1 section 1)."""

    code = "frame_too_large"

    def __init__(self, size: int, max_frame: int) -> None:
        super().__init__(f"frame of {size} bytes exceeds the maximum of {max_frame}")
        self.size = size
        self.max_frame = max_frame


class EncodeError(ProtocolError, ValueError):
    """A message that cannot be encoded: a bad key, value or size."""


class ReplyError(ProtocolError):
    """A reply from the main control whose values cannot be read."""


class ServerError(Apollo11Error):
    """An ``error`` frame from the main control, such as ``queue_full``."""

    def __init__(self, code: str, message: str = "", fields: dict[str, str] | None = None) -> None:
        text = f"main control error {code}" + (f": {message}" if message else "")
        super().__init__(text)
        self.code = code
        self.message = message
        #: the error frame's other keys (``state_version`` of a ``conflict``)
        self.fields: dict[str, str] = fields or {}

    @property
    def queue_full(self) -> bool:
        """Backpressure: the request may be retried later, with backoff."""
        return self.code == "queue_full"


class AuthRequired(Apollo11Error):
    """The main control asks for the shared token and none was given."""


class ConnectionLost(Apollo11Error, ConnectionError):
    """The connection failed; requests in flight have no reply.

    A submit in flight may still have made its task: submit again with
    the same ``key`` to find out.
    """


class ClientClosed(Apollo11Error):
    """The client was closed by its owner."""


class OutcomeUnknown(ConnectionLost):
    """The connection was lost before the reply of a request that is not
    safe to send twice (an unkeyed submit, a cancel, a state change...):
    the main control may or may not have acted on it."""


class NoLeader(ConnectionLost):
    """No main control address answered as a cluster's leader (protocol
    section 8.13): the members reached were followers that named no leader
    among the addresses, or none was elected within the timeout."""


class LeaderOutside(NoLeader):
    """A follower named a leader that is not among the configured
    addresses. It is not followed, on purpose: add it to the addresses."""

    def __init__(self, follower: str, leader: str, addrs: list[str]) -> None:
        super().__init__(f"the leader {leader} (named by the follower {follower}) is not among the main control "
                         f"addresses {','.join(addrs)}: add it")
        self.follower, self.leader, self.addrs = follower, leader, list(addrs)
