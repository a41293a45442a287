"""The typed side of the client: requests built and replies read (wire-v1 section 5).

Each reply type is a frozen dataclass; the ``parse_*`` functions read one
from its message, and :func:`submit_message` builds a ``submit``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from .codec import Message, parse_uint
from .errors import EncodeError, ReplyError

STATES = ("waiting", "pending", "dispatched", "running", "retrying", "succeeded", "failed", "cancelled")
TERMINAL = frozenset({"succeeded", "failed", "cancelled"})


@dataclass(frozen=True)
class Submitted:
    """The ``submitted`` reply: the task is durable."""

    task_id: int
    duplicate: bool = False  # the key matched a known task: nothing was made


@dataclass(frozen=True)
class Done:
    """The ``done`` notice: the task reached a terminal state."""

    task_id: int
    state: str  # succeeded, failed or cancelled
    out: dict[str, str] = field(default_factory=dict)
    error: str = ""

    @property
    def succeeded(self) -> bool:
        return self.state == "succeeded"


@dataclass(frozen=True)
class TaskState:
    """The ``task_state`` reply of :meth:`AsyncClient.query`."""

    task_id: int
    version: int
    state: str
    attempt: int
    max_attempts: int
    task_type: str
    executor_id: str
    error: str
    out: dict[str, str]
    created_ms: int  # Unix time in milliseconds
    updated_ms: int
    trace_id: str


@dataclass(frozen=True)
class TaskPage:
    """One ``tasks`` reply of :meth:`AsyncClient.list`; pass ``next`` as ``after``."""

    ids: list[int]
    next: int | None


@dataclass(frozen=True)
class Stats:
    """The ``stats`` reply; ``extra`` holds every key no field holds."""

    tasks: dict[str, int]
    executors: int
    state_version: int
    uptime_ms: int
    extra: dict[str, str]


@dataclass(frozen=True)
class SharedState:
    """The ``state`` reply: values of the keys asked for that are set."""

    values: dict[str, str]
    version: int


def millis(seconds: float, what: str) -> int:
    """Seconds to whole milliseconds, rounded up so that 0.0001 is not 0."""
    if seconds < 0 or math.isnan(seconds) or math.isinf(seconds):
        raise ValueError(f"{what} {seconds!r}: want a finite number of seconds, 0 or more")
    return math.ceil(seconds * 1000)


def submit_message(
    task_type: str,
    args: Mapping[str, str] | None = None,
    *,
    priority: int | None = None,
    max_attempts: int | None = None,
    timeout: float | None = None,
    delay: float | None = None,
    key: str | None = None,
    trace_id: str | None = None,
    depends_on: Iterable[int] | None = None,
    wait: bool = False,
) -> Message:
    """Build a ``submit``; None leaves the main control's default."""
    if not task_type:
        raise ValueError("task_type is required")
    msg = Message("submit", {"task_type": task_type})
    for k, v in (args or {}).items():
        if not isinstance(v, str):
            raise EncodeError(f"arg {k!r}: want text, got {type(v).__name__}")
        msg["arg." + k] = v
    if priority is not None:
        if not isinstance(priority, int) or not 0 <= priority <= 9:
            raise ValueError(f"priority {priority!r}: want 0 to 9")
        msg["priority"] = priority
    if max_attempts is not None:
        if not isinstance(max_attempts, int) or max_attempts < 1:
            raise ValueError(f"max_attempts {max_attempts!r}: want 1 or more")
        msg["max_attempts"] = max_attempts
    if timeout is not None:
        msg["timeout_ms"] = millis(timeout, "timeout")
    if delay is not None:
        msg["delay_ms"] = millis(delay, "delay")
    if key is not None:
        if not key:
            raise ValueError("key is empty")
        msg["key"] = key
    if trace_id:
        msg["trace_id"] = trace_id
    if depends_on is not None:
        ids = [int(i) for i in depends_on]
        if any(i < 1 for i in ids):
            raise ValueError(f"depends_on {ids}: task ids start at 1")
        if ids:
            msg["depends_on"] = ids
    if wait:
        msg["wait"] = True
    return msg


def parse_done(m: Message) -> Done:
    return Done(task_id=m.uint("task_id"), state=m.get("state") or "", out=m.with_prefix("out."), error=m.get("error") or "")


def parse_task_state(m: Message) -> TaskState:
    return TaskState(
        task_id=m.uint("task_id"),
        version=m.uint("version"),
        state=m.get("state") or "",
        attempt=m.uint("attempt"),
        max_attempts=m.uint("max_attempts"),
        task_type=m.get("task_type") or "",
        executor_id=m.get("executor_id") or "",
        error=m.get("error") or "",
        out=m.with_prefix("out."),
        created_ms=m.uint("created_ms", 0),
        updated_ms=m.uint("updated_ms", 0),
        trace_id=m.get("trace_id") or "",
    )


def parse_stats(m: Message) -> Stats:
    tasks: dict[str, int] = {}
    extra: dict[str, str] = {}
    for k, v in m.items():
        if k in ("type", "req", "executors", "state_version", "uptime_ms"):
            continue
        if k.startswith("tasks."):
            n = parse_uint(v)
            if n is None:
                raise ReplyError(f"stats: {k}={v!r} is not a number")
            tasks[k[6:]] = n
        else:
            extra[k] = v
    return Stats(tasks, m.uint("executors"), m.uint("state_version"), m.uint("uptime_ms", 0), extra)


def parse_state(m: Message) -> SharedState:
    return SharedState(m.with_prefix("state."), m.uint("state_version"))


def parse_page(m: Message) -> TaskPage:
    ids = []
    for raw in m.list("ids"):
        n = parse_uint(raw)
        if n is None:
            raise ReplyError(f"tasks: bad id {raw!r}")
        ids.append(n)
    return TaskPage(ids, m.uint("next") if "next" in m else None)
