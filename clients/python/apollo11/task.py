"""What a handler sees and returns: :class:`Task`, :class:`Result`, :class:`Failure`.

A handler takes a :class:`Task` and returns None, a dict (the ``out.*``
keys) or a :class:`Result`; raising fails the task (retryable, unless it
raises :class:`Failure` with ``retryable=False``).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Union

from .codec import Message
from .errors import ConnectionLost, ProtocolError
from .replies import SharedState

if TYPE_CHECKING:
    from .executor import AsyncExecutor


@dataclass
class Result:
    """What a handler hands back. ``set`` and ``add`` change the shared
    state, and are sent only when the handler succeeds."""

    out: dict[str, str] = field(default_factory=dict)
    set: dict[str, str] = field(default_factory=dict)
    add: dict[str, int] = field(default_factory=dict)


class Failure(Exception):
    """Raise from a handler to fail its task with this error text; with
    ``retryable=False`` it is not retried. ``out`` is kept on the task."""

    def __init__(self, message: str, retryable: bool = True, out: Mapping[str, str] | None = None) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.out = dict(out or {})


HandlerReturn = Union[Result, Mapping[str, str], None]
Handler = Callable[["Task"], Union[HandlerReturn, Awaitable[HandlerReturn]]]


class Task:
    """One dispatch of a task. ``(id, version)`` is the dispatch token."""

    def __init__(self, ex: AsyncExecutor, m: Message) -> None:
        self._ex = ex
        self.id = m.uint("task_id")
        self.version = m.uint("version")
        self.type = m.get("task_type") or ""
        self.trace_id = m.get("trace_id") or ""
        self.args: dict[str, str] = m.with_prefix("arg.")
        self.attempt = 0
        self.max_attempts = 0
        self.timeout: float | None = None  # seconds per attempt; None: none
        self.state_version = 0
        self.bad = ""
        try:
            if not self.type:
                raise ProtocolError("missing key task_type")
            self.attempt = m.uint("attempt")
            self.max_attempts = m.uint("max_attempts")
            ms = m.uint("timeout_ms")
            self.timeout = ms / 1000 if ms else None
            self.state_version = m.uint("state_version")
            if "trace_id" not in m:
                raise ProtocolError("missing key trace_id")
        except ProtocolError as e:
            self.bad = str(e)
        self.cancelled = threading.Event()
        """Set when the task should stop: see ``cancel_reason``."""
        self.cancel_reason = ""  # "cancelled" (by the main control), "timeout" or "shutdown"

    @property
    def token(self) -> tuple[int, int]:
        return (self.id, self.version)

    def _cancel(self, reason: str) -> None:
        if not self.cancelled.is_set():
            self.cancel_reason = reason
            self.cancelled.set()

    def progress(self, percent: int, note: str | None = None) -> None:
        """Send ``progress`` (advisory; dropped while disconnected). Safe
        from any thread."""
        if not 0 <= percent <= 100:
            raise ValueError(f"progress: percent {percent} not in 0-100")
        msg = Message("progress", {"task_id": self.id, "version": self.version, "percent": percent})
        if note:
            msg["note"] = note
        self._ex._threadsafe(self._ex._send_progress, msg)

    async def state_get_async(self, *keys: str) -> SharedState:
        """The shared state (every key, or those given), from a coroutine handler."""
        return await self._ex._state_get(keys)

    def state_get(self, *keys: str, timeout: float | None = 30.0) -> SharedState:
        """The shared state, from a plain (threaded) handler."""
        loop = self._ex._loop
        if loop is None:
            raise ConnectionLost("executor not running")
        try:
            running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            raise RuntimeError("state_get on the event loop would block it: use await task.state_get_async()")
        return asyncio.run_coroutine_threadsafe(self._ex._state_get(keys), loop).result(timeout)
