"""Task running for the executor: handlers, slots, results until acknowledged.

The :class:`Runner` answers each ``task`` with ``started`` and runs its
handler: coroutine functions on the event loop, cancelled by a ``cancel``;
plain functions on a thread pool, where they see ``task.cancelled`` set.
It sends each ``result`` and keeps it until its ``result_ack``, so that a
new connection can send it again. It knows no sockets: it sends through
the executor's current :class:`Session`, when there is one.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .codec import Message, encode_frame
from .errors import ConnectionLost, EncodeError, FrameTooLargeError, ProtocolError
from .session import Session, dispatch_token, started
from .task import Failure, Handler, Result, Task

if TYPE_CHECKING:
    from .executor import AsyncExecutor

log = logging.getLogger("apollo11.executor")

MAX_ERROR_TEXT = 4096


@dataclass
class _Run:
    task: Task
    is_async: bool
    aio: asyncio.Task[None] | None = None


@dataclass
class Outcome:
    """A finished dispatch's result, kept until its ``result_ack``."""

    token: tuple[int, int]
    seq: int
    ok: bool
    retryable: bool = True
    error: str = ""
    out: dict[str, str] = field(default_factory=dict)
    set: dict[str, str] = field(default_factory=dict)
    add: dict[str, int] = field(default_factory=dict)

    def message(self) -> Message:
        m = Message("result", {"task_id": self.token[0], "version": self.token[1],
                               "status": "succeeded" if self.ok else "failed"})
        if not self.ok:
            if not self.retryable:
                m["retryable"] = False
            if self.error:
                m["error"] = self.error
        for k in sorted(self.out):
            m["out." + k] = _text(self.out[k], "out." + k)
        if self.ok:
            for k in sorted(self.set):
                m["state.set." + k] = _text(self.set[k], "state.set." + k)
            for k in sorted(self.add):
                v = self.add[k]
                if isinstance(v, bool) or not isinstance(v, int) or not -(1 << 63) <= v < 1 << 63:
                    raise EncodeError(f"state.add.{k}: want an int64, got {v!r}")
                m["state.add." + k] = v
        return m

    def frame(self, max_frame: int) -> tuple[Message, str]:
        """The result message, checked against ``max_frame``; one the wire
        cannot carry becomes a permanent failure, and the second value says why."""
        try:
            m = self.message()
            encode_frame(m, max_frame)
            return m, ""
        except FrameTooLargeError as e:
            why, text = str(e), "result too large"
        except EncodeError as e:
            why = text = f"invalid result: {e}"
        self.ok, self.retryable, self.error = False, False, _clip(text)
        self.out, self.set, self.add = {}, {}, {}
        return self.message(), why


def _text(v: object, key: str) -> str:
    if not isinstance(v, str):
        raise EncodeError(f"{key}: want text, got {type(v).__name__}")
    return v


def _clip(text: str) -> str:
    text = text.encode("utf-8", "replace").decode("utf-8")
    return text if len(text.encode("utf-8")) <= MAX_ERROR_TEXT else text[: MAX_ERROR_TEXT // 4 - 1] + "..."


def _result_frame(o: Outcome, max_frame: int) -> Message:
    m, why = o.frame(max_frame)
    if why:
        log.warning("result of task %d.%d replaced: %s", *o.token, why)
    return m


class Runner:
    """The dispatches running and the results awaiting ``result_ack``."""

    def __init__(self, ex: AsyncExecutor, handlers: Mapping[str, Handler]) -> None:
        self._ex = ex  # its current session carries results; handlers' tasks reach it
        self._handlers = handlers
        self.runs: dict[tuple[int, int], _Run] = {}
        self.unacked: dict[tuple[int, int], Outcome] = {}
        self._seq = 0
        self.draining = False  # no new task
        self.quiet = asyncio.Event()  # no runs and no unacked results
        self._pool: ThreadPoolExecutor | None = None

    def open(self, slots: int) -> None:
        """Make the thread pool, and an event for the loop about to run."""
        self.quiet = asyncio.Event()
        self._settle()
        self._pool = ThreadPoolExecutor(max_workers=min(slots, 256), thread_name_prefix="apollo11-task")

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)

    def running(self) -> list[str]:
        """The dispatch tokens a heartbeat lists: runs not cancelled."""
        return [f"{i}.{v}" for (i, v), r in sorted(self.runs.items()) if not r.task.cancelled.is_set()]

    def resume(self, s: Session) -> None:
        """On a new connection, before anything else: ``started`` for
        handlers still running, then ``started`` and ``result`` for every
        unacknowledged result."""
        for tok in sorted(self.runs):
            if not self.runs[tok].task.cancelled.is_set():
                s.conn.send(started(tok))
        for o in sorted(self.unacked.values(), key=lambda o: o.seq):
            m = _result_frame(o, s.max_frame)
            s.conn.send(started(o.token))
            s.conn.send(m)

    def on_task(self, s: Session, m: Message) -> None:
        try:
            task = Task(self._ex, m)
        except ProtocolError as e:
            log.error("ignoring a task frame without a dispatch token: %s", e)
            return
        tok = task.token
        refused = ""
        if self.draining:
            refused = "draining"
        elif tok in self.runs:
            refused = "dispatch already running"
        elif tok in self.unacked:
            refused = "dispatch already ran; its result awaits result_ack"
        elif len(self.runs) >= s.slots:
            refused = "no free slot"
        if refused:
            log.warning("task %d.%d not started: %s", *tok, refused)
            return
        handler = self._handlers.get(task.type)
        run = _Run(task, handler is not None and inspect.iscoroutinefunction(handler))
        self.runs[tok] = run
        self.quiet.clear()
        s.send(started(tok))
        run.aio = asyncio.create_task(self._execute(run, handler))

    def on_cancel(self, m: Message) -> None:
        run = self.runs.get(dispatch_token(m) or (0, 0))
        if run is not None and not run.task.cancelled.is_set():
            log.info("task %d.%d cancelled by the main control", *run.task.token)
            self._cancel_run(run, "cancelled")

    def on_result_ack(self, m: Message) -> None:
        tok = dispatch_token(m)
        o = self.unacked.pop(tok, None) if tok else None
        self._settle()
        if o is not None and m.get("accepted") != "true":
            log.warning("result of task %d.%d refused: %s", *o.token, m.get("reason"))

    async def drain(self, drain: bool, timeout: float) -> None:
        """Take no new task; with ``drain``, give running handlers and
        unacknowledged results ``timeout`` seconds; then cancel what runs."""
        self.draining = True
        if drain and not self.quiet.is_set():
            try:
                await asyncio.wait_for(self.quiet.wait(), timeout)
            except asyncio.TimeoutError:
                log.warning("drain timeout: cancelling %d running tasks", len(self.runs))
        for run in list(self.runs.values()):
            self._cancel_run(run, "shutdown")

    def _cancel_run(self, run: _Run, reason: str) -> None:
        run.task._cancel(reason)
        if run.is_async and run.aio is not None:
            run.aio.cancel()

    async def _execute(self, run: _Run, handler: Handler | None) -> None:
        task = run.task
        loop = asyncio.get_running_loop()
        timer = loop.call_later(task.timeout, task._cancel, "timeout") if task.timeout and not run.is_async else None
        outcome: Outcome | None = None
        try:
            if task.bad:
                raise Failure(f"bad task frame: {task.bad}", retryable=False)
            if handler is None:
                raise Failure(f"no handler for task type {task.type!r} on this executor", retryable=False)
            if run.is_async:
                async with asyncio.timeout(task.timeout) as cm:
                    try:
                        ret = await handler(task)  # type: ignore[misc]
                    except BaseException:
                        if cm.expired():
                            task._cancel("timeout")
                        raise
            else:
                ret = await loop.run_in_executor(self._pool, handler, task)
            outcome = self._outcome(task, ret, None)
        except asyncio.CancelledError:
            if task.cancel_reason not in ("cancelled", "shutdown"):
                raise
        except BaseException as e:  # a handler's failure, whatever it raised
            if task.cancel_reason in ("cancelled", "shutdown"):
                pass
            elif task.cancel_reason == "timeout":
                outcome = self._outcome(task, None, Failure(f"timeout after {task.timeout}s"))
            else:
                outcome = self._outcome(task, None, e)
        finally:
            if timer is not None:
                timer.cancel()
            if task.cancel_reason in ("cancelled", "shutdown"):
                outcome = None  # no result for a cancelled dispatch
            self.runs.pop(task.token, None)
            if outcome is not None:
                self._finish(outcome)
            self._settle()

    def _outcome(self, task: Task, ret: Any, err: BaseException | None) -> Outcome:
        self._seq += 1
        o = Outcome(task.token, self._seq, ok=err is None)
        if err is not None:
            if isinstance(err, Failure):
                o.retryable, o.out, o.error = err.retryable, err.out, _clip(str(err))
            else:
                o.error = _clip(f"{type(err).__name__}: {err}" if str(err) else type(err).__name__)
            return o
        if isinstance(ret, Result):
            o.out, o.set, o.add = dict(ret.out), dict(ret.set), dict(ret.add)
        elif isinstance(ret, Mapping):
            o.out = dict(ret)
        elif ret is not None:
            o.ok, o.retryable = False, False
            o.error = f"handler returned {type(ret).__name__}: want None, a dict or a Result"
        return o

    def _finish(self, o: Outcome) -> None:
        self.unacked[o.token] = o
        s = self._ex._session
        if s is None:
            return  # sent on the next connection
        try:
            s.send(_result_frame(o, s.max_frame))
        except ConnectionLost:
            pass  # re-sent on the next connection

    def _settle(self) -> None:
        if not self.runs and not self.unacked:
            self.quiet.set()
