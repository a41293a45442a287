"""The executor: runs tasks of the types it registers (wire-v1 section 4).

:class:`AsyncExecutor` is the core. It connects, registers its task types
and slots (signed with the token when asked), sends ``heartbeat`` with
``running=`` every ``heartbeat_ms``, answers each ``task`` with
``started`` and runs its handler, sends ``result`` and keeps it until its
``result_ack``. It reconnects after any failure, with exponential backoff
and jitter, and then sends ``started`` again for handlers still running
and every unacknowledged result. ``stop()`` drains: no new task, running
handlers get ``drain_timeout`` to finish, then ``bye``.

A handler takes a :class:`Task` and returns None, a dict (the ``out.*``
keys) or a :class:`Result`; raising fails the task (retryable, unless it
raises :class:`Failure` with ``retryable=False``). Coroutine functions run
on the event loop and are cancelled by a ``cancel``; plain functions run
in a thread of their own and see ``task.cancelled`` set instead.
:class:`Executor` is the blocking API: the same core on its own loop.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
import random
import re
import socket
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Union

from .client import SharedState, parse_state
from .codec import Message, parse_uint
from .connection import DEFAULT_ADDR, AsyncConnection, Welcome, register_message, resolve_token
from .errors import ConnectionLost, EncodeError, FrameTooLargeError, ProtocolError, ServerError

log = logging.getLogger("apollo11.executor")

MAX_SLOTS = 65536
MAX_ERROR_TEXT = 4096
_ID = re.compile(r"[A-Za-z0-9_.:\-]{1,128}")
_MAX_TOKEN = 20 + 1 + 20  # task_id.version with 20-digit numbers


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


@dataclass
class _Run:
    task: Task
    is_async: bool
    aio: asyncio.Task[None] | None = None


@dataclass
class _Outcome:
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
        from .codec import encode_frame

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


def heartbeat_slots(max_frame: int) -> int:
    """How many dispatches a heartbeat can list within ``max_frame`` when
    every number has 20 digits: the most slots worth registering."""
    fixed = len("type=heartbeat\nseq=") + 20 + len("\nrunning=")
    return max(1, min(MAX_SLOTS, (max_frame - fixed + 1) // (_MAX_TOKEN + 1)))


class _Backoff:
    """The reconnect delay: doubles from lo up to hi, each drawn from [d/2, d]."""

    def __init__(self, lo: float, hi: float) -> None:
        self.lo, self.hi, self.cur = lo, hi, 0.0

    def next(self) -> float:
        self.cur = min(self.lo, self.hi) if self.cur == 0 else min(self.cur * 2, self.hi)
        return random.uniform(self.cur / 2, self.cur)

    def reset(self) -> None:
        self.cur = 0.0


class _Session:
    """One registered connection."""

    def __init__(self, conn: AsyncConnection, welcome: Welcome, slots: int, reg: Message) -> None:
        self.conn = conn
        self.max_frame = welcome.max_frame
        self.slots = slots
        timeout_ms = reg.uint("timeout_ms", 15000) or 15000
        hb_ms = reg.uint("heartbeat_ms", timeout_ms // 3) or timeout_ms // 3
        self.timeout = timeout_ms / 1000
        self.heartbeat = hb_ms / 1000
        self.bye_ack = asyncio.Event()
        self.waiters: dict[str, asyncio.Future[Message]] = {}
        self.req = 0
        self.max_unsent = max(16 << 20, 4 * self.max_frame)

    def send(self, m: Message) -> None:
        self.conn.send(m)
        if self.conn.unsent() > self.max_unsent:
            log.error("the main control does not read: closing the connection")
            self.conn.close()


def default_id() -> str:
    host = re.sub(r"[^A-Za-z0-9_.:\-]", "-", socket.gethostname())[:100] or "host"
    return f"{host}-py-{os.getpid()}"


class AsyncExecutor:
    """The executor core; ``await run()`` until ``stop()``."""

    def __init__(
        self,
        addr: str = DEFAULT_ADDR,
        *,
        executor_id: str | None = None,
        handlers: Mapping[str, Handler] | None = None,
        slots: int = 1,
        token: bytes | str | None = None,
        token_file: str | Path | None = None,
        drain_timeout: float = 30.0,
        backoff_min: float = 0.5,
        backoff_max: float = 30.0,
        dial_timeout: float = 5.0,
    ) -> None:
        self.addr = addr
        self.executor_id = executor_id or default_id()
        if not _ID.fullmatch(self.executor_id):
            raise ValueError(f"executor_id {self.executor_id!r}: want 1-128 bytes of A-Z a-z 0-9 _ . : -")
        if not 1 <= slots <= MAX_SLOTS:
            raise ValueError(f"slots {slots}: want 1 to {MAX_SLOTS}")
        if not 0 < backoff_min <= backoff_max:
            raise ValueError("want 0 < backoff_min <= backoff_max")
        self.slots = slots
        self.token = resolve_token(token, token_file)
        self.drain_timeout = drain_timeout
        self.backoff_min, self.backoff_max = backoff_min, backoff_max
        self.dial_timeout = dial_timeout
        self._handlers: dict[str, Handler] = {}
        for t, h in (handlers or {}).items():
            self.add_handler(t, h)
        self.registrations = 0  # how many times it registered, for monitoring
        self._loop: asyncio.AbstractEventLoop | None = None
        self._session: _Session | None = None
        self._runs: dict[tuple[int, int], _Run] = {}
        self._unacked: dict[tuple[int, int], _Outcome] = {}
        self._seq = 0
        self._draining = False
        self._closing = False  # run() is ending: no more connections
        self._stop_drain: bool | None = None  # set by stop(): whether to drain
        self._stop_ev: asyncio.Event | None = None
        self._quiet: asyncio.Event | None = None  # no runs and no unacked results
        self._registered: asyncio.Event | None = None
        self._pool: ThreadPoolExecutor | None = None

    def add_handler(self, task_type: str, handler: Handler) -> None:
        if not task_type or re.search(r"[,\s]", task_type) or not task_type.isprintable():
            raise ValueError(f"task type {task_type!r}: want non-empty text without commas or spaces")
        self._handlers[task_type] = handler

    def handler(self, task_type: str) -> Callable[[Handler], Handler]:
        """A decorator: ``@ex.handler("resize")`` registers the function."""
        def register(fn: Handler) -> Handler:
            self.add_handler(task_type, fn)
            return fn
        return register

    # ---- life cycle

    def stop(self, drain: bool = True) -> None:
        """Stop ``run()``: with ``drain``, running handlers get
        ``drain_timeout`` to finish first; then ``bye``. Safe from any thread."""
        self._stop_drain = drain if self._stop_drain is None else self._stop_drain and drain
        if self._loop is not None and self._stop_ev is not None:
            self._threadsafe(self._stop_ev.set)

    async def wait_registered(self) -> None:
        """Wait until the executor is registered (again)."""
        while self._registered is None:
            await asyncio.sleep(0.01)
        await self._registered.wait()

    @property
    def connected(self) -> bool:
        return self._session is not None

    async def run(self) -> None:
        """Connect, register and run tasks until ``stop()``."""
        if not self._handlers:
            raise ValueError("no handlers")
        self._loop = asyncio.get_running_loop()
        self._stop_ev = asyncio.Event()
        self._quiet = asyncio.Event()
        self._quiet.set()
        self._registered = asyncio.Event()
        self._pool = ThreadPoolExecutor(max_workers=min(self.slots, 256), thread_name_prefix="apollo11-task")
        if self._stop_drain is not None:
            self._stop_ev.set()
        conn_loop = asyncio.create_task(self._connect_loop())
        try:
            await self._stop_ev.wait()
            await self._shutdown(bool(self._stop_drain))
        finally:
            # A flag as well as the cancel: wait_for in 3.11 may swallow a
            # cancel that meets a read ending at the same moment.
            self._closing = True
            conn_loop.cancel()
            await asyncio.wait({conn_loop}, timeout=5.0)
            if self._session is not None:
                self._session.conn.close()
            self._pool.shutdown(wait=False, cancel_futures=True)

    async def _shutdown(self, drain: bool) -> None:
        self._draining = True
        assert self._quiet is not None
        if drain and not self._quiet.is_set():
            try:
                await asyncio.wait_for(self._quiet.wait(), self.drain_timeout if drain else 0.5)
            except asyncio.TimeoutError:
                log.warning("drain timeout: cancelling %d running tasks", len(self._runs))
        for run in list(self._runs.values()):
            self._cancel_run(run, "shutdown")
        s = self._session
        if s is not None:
            try:
                s.send(Message("bye", {"reason": "shutdown"}))
                async with asyncio.timeout(2.0):
                    await s.conn.drain()
                    await s.bye_ack.wait()
            except (ConnectionLost, TimeoutError) as e:
                log.info("no bye_ack: %s", e or "timeout")

    async def _connect_loop(self) -> None:
        backoff = _Backoff(self.backoff_min, self.backoff_max)
        while not self._closing:
            try:
                s = await self._handshake()
            except Exception as e:  # every failure to register is retried
                level = logging.ERROR if isinstance(e, ServerError) and e.code == "auth_failed" else logging.WARNING
                log.log(level, "cannot register with %s: %s", self.addr, e)
                await asyncio.sleep(backoff.next())
                continue
            if self._closing:
                s.conn.close()
                return
            # Back within half the timeout a restarted main control waits.
            backoff.hi = min(self.backoff_max, s.timeout / 2)
            began = time.monotonic()
            err = await self._serve(s)
            log.warning("connection to the main control lost: %s", err)
            if time.monotonic() - began >= min(10.0, backoff.hi):
                backoff.reset()
            await asyncio.sleep(backoff.next())

    async def _handshake(self) -> _Session:
        conn = await AsyncConnection.connect(self.addr, self.dial_timeout)
        try:
            assert conn.welcome is not None
            slots = min(self.slots, heartbeat_slots(conn.welcome.max_frame))
            if slots < self.slots:
                log.warning("registering %d slots, not %d: a heartbeat must fit max_frame %d",
                            slots, self.slots, conn.welcome.max_frame)
            conn.send(register_message(conn.welcome, self.executor_id, sorted(self._handlers), slots, self.token))
            while True:
                async with asyncio.timeout(self.dial_timeout):
                    m = await conn.recv()
                if m.type == "registered":
                    return _Session(conn, conn.welcome, slots, m)
                if m.type == "error":
                    raise ServerError(m.get("code") or "", m.get("message") or "")
        except BaseException:
            conn.close()
            raise

    async def _serve(self, s: _Session) -> BaseException | str:
        hb = asyncio.create_task(self._heartbeats(s))
        try:
            self._activate(s)
            while not self._closing:
                async with asyncio.timeout(s.timeout):
                    m = await s.conn.recv()
                self._handle(s, m)
            return "executor stopping"
        except TimeoutError:
            return f"no frame from the main control for {s.timeout}s"
        except (ConnectionLost, ProtocolError, OSError) as e:
            return e
        finally:
            hb.cancel()
            self._session = None
            assert self._registered is not None
            self._registered.clear()
            for fut in s.waiters.values():
                if not fut.done():
                    fut.set_exception(ConnectionLost("connection lost before the reply"))
            s.conn.close()

    def _activate(self, s: _Session) -> None:
        """Before anything else: ``started`` for handlers still running,
        then ``started`` and ``result`` for every unacknowledged result."""
        for tok in sorted(self._runs):
            if not self._runs[tok].task.cancelled.is_set():
                s.conn.send(_started(tok))
        for o in sorted(self._unacked.values(), key=lambda o: o.seq):
            m, why = o.frame(s.max_frame)
            if why:
                log.warning("result of task %d.%d replaced: %s", *o.token, why)
            s.conn.send(_started(o.token))
            s.conn.send(m)
        self._session = s
        self.registrations += 1
        assert self._registered is not None
        self._registered.set()
        log.info("registered with %s as %s: %d slots, heartbeat %ss, %d running, %d results re-sent",
                 self.addr, self.executor_id, s.slots, s.heartbeat, len(self._runs), len(self._unacked))

    async def _heartbeats(self, s: _Session) -> None:
        seq = 0
        while True:
            await asyncio.sleep(s.heartbeat)
            seq += 1
            running = [f"{i}.{v}" for (i, v), r in sorted(self._runs.items()) if not r.task.cancelled.is_set()]
            try:
                s.send(Message("heartbeat", {"seq": seq, "running": running}))
            except (ConnectionLost, ProtocolError) as e:
                log.warning("cannot send heartbeat: %s", e)

    # ---- frames from the main control

    def _handle(self, s: _Session, m: Message) -> None:
        t = m.type
        if t == "task":
            self._on_task(s, m)
        elif t == "cancel":
            run = self._runs.get(_token(m) or (0, 0))
            if run is not None and not run.task.cancelled.is_set():
                log.info("task %d.%d cancelled by the main control", *run.task.token)
                self._cancel_run(run, "cancelled")
        elif t == "result_ack":
            tok = _token(m)
            o = self._unacked.pop(tok, None) if tok else None
            self._settle()
            if o is not None and m.get("accepted") != "true":
                log.warning("result of task %d.%d refused: %s", *o.token, m.get("reason"))
        elif t in ("state", "error") and m.get("req") in s.waiters:
            fut = s.waiters.pop(m["req"])
            if not fut.done():
                fut.set_result(m)
        elif t == "error":
            log.warning("error from the main control: %s %s", m.get("code"), m.get("message") or "")
        elif t == "bye_ack":
            s.bye_ack.set()

    def _on_task(self, s: _Session, m: Message) -> None:
        try:
            task = Task(self, m)
        except ProtocolError as e:
            log.error("ignoring a task frame without a dispatch token: %s", e)
            return
        tok = task.token
        refused = ""
        if self._draining:
            refused = "draining"
        elif tok in self._runs:
            refused = "dispatch already running"
        elif tok in self._unacked:
            refused = "dispatch already ran; its result awaits result_ack"
        elif len(self._runs) >= s.slots:
            refused = "no free slot"
        if refused:
            log.warning("task %d.%d not started: %s", *tok, refused)
            return
        handler = self._handlers.get(task.type)
        run = _Run(task, handler is not None and inspect.iscoroutinefunction(handler))
        self._runs[tok] = run
        assert self._quiet is not None
        self._quiet.clear()
        s.send(_started(tok))
        run.aio = asyncio.create_task(self._execute(run, handler))

    def _cancel_run(self, run: _Run, reason: str) -> None:
        run.task._cancel(reason)
        if run.is_async and run.aio is not None:
            run.aio.cancel()

    async def _execute(self, run: _Run, handler: Handler | None) -> None:
        task = run.task
        loop = asyncio.get_running_loop()
        timer = loop.call_later(task.timeout, task._cancel, "timeout") if task.timeout and not run.is_async else None
        outcome: _Outcome | None = None
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
            self._runs.pop(task.token, None)
            if outcome is not None:
                self._finish(outcome)
            self._settle()

    def _outcome(self, task: Task, ret: Any, err: BaseException | None) -> _Outcome:
        self._seq += 1
        o = _Outcome(task.token, self._seq, ok=err is None)
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

    def _finish(self, o: _Outcome) -> None:
        self._unacked[o.token] = o
        s = self._session
        if s is None:
            return  # sent on the next connection
        m, why = o.frame(s.max_frame)
        if why:
            log.warning("result of task %d.%d replaced: %s", *o.token, why)
        try:
            s.send(m)
        except ConnectionLost:
            pass  # re-sent on the next connection

    def _settle(self) -> None:
        assert self._quiet is not None
        if not self._runs and not self._unacked:
            self._quiet.set()

    # ---- requests from handlers

    def _threadsafe(self, fn: Callable[..., Any], *args: Any) -> None:
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        try:
            on_loop = asyncio.get_running_loop() is loop
        except RuntimeError:
            on_loop = False
        if on_loop:
            fn(*args)
        else:
            loop.call_soon_threadsafe(fn, *args)

    def _send_progress(self, m: Message) -> None:
        s = self._session
        if s is None:
            return
        try:
            s.send(m)
        except FrameTooLargeError:
            del m["note"]
            s.send(m)
        except ConnectionLost:
            pass

    async def _state_get(self, keys: tuple[str, ...]) -> SharedState:
        s = self._session
        if s is None:
            raise ConnectionLost("not connected to the main control")
        s.req += 1
        req = format(s.req, "x")
        fut: asyncio.Future[Message] = asyncio.get_running_loop().create_future()
        msg = Message("state_get", {"req": req})
        if keys:
            msg["keys"] = keys
        s.send(msg)
        s.waiters[req] = fut
        try:
            m = await fut
        finally:
            s.waiters.pop(req, None)
        if m.type == "error":
            raise ServerError(m.get("code") or "", m.get("message") or "")
        return parse_state(m)


def _started(tok: tuple[int, int]) -> Message:
    return Message("started", {"task_id": tok[0], "version": tok[1]})


def _token(m: Message) -> tuple[int, int] | None:
    i, v = parse_uint(m.get("task_id") or ""), parse_uint(m.get("version") or "")
    if i is None or v is None:
        log.warning("ignoring a %s frame without a dispatch token", m.type)
        return None
    return (i, v)


class Executor:
    """The blocking executor: ``run()`` blocks until ``stop()`` (from
    another thread or a handler); ``start()`` runs it on a thread."""

    def __init__(self, addr: str = DEFAULT_ADDR, **options: Any) -> None:
        self._a = AsyncExecutor(addr, **options)
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None
        self._running = threading.Event()

    @property
    def executor_id(self) -> str:
        return self._a.executor_id

    @property
    def registrations(self) -> int:
        return self._a.registrations

    def add_handler(self, task_type: str, handler: Handler) -> None:
        self._a.add_handler(task_type, handler)

    def handler(self, task_type: str) -> Callable[[Handler], Handler]:
        return self._a.handler(task_type)

    def run(self) -> None:
        """Run until ``stop()``."""
        asyncio.run(self._main())

    async def _main(self) -> None:
        asyncio.get_running_loop().call_soon(self._running.set)
        await self._a.run()

    def start(self) -> None:
        """Run on a background thread."""
        def main() -> None:
            try:
                self.run()
            except BaseException as e:  # kept for stop() to raise
                self._error = e

        self._thread = threading.Thread(target=main, name="apollo11-executor", daemon=True)
        self._thread.start()

    def wait_registered(self, timeout: float | None = None) -> bool:
        """Wait until registered; False when ``timeout`` passed first."""
        deadline = None if timeout is None else time.monotonic() + timeout
        if not self._running.wait(timeout):
            return False
        loop = self._a._loop
        assert loop is not None
        left = None if deadline is None else max(0.0, deadline - time.monotonic())
        fut = asyncio.run_coroutine_threadsafe(self._a.wait_registered(), loop)
        try:
            fut.result(left)
            return True
        except TimeoutError:
            fut.cancel()
            return False

    def stop(self, drain: bool = True, timeout: float | None = None) -> None:
        """Stop (see :meth:`AsyncExecutor.stop`) and, after ``start()``,
        wait for the thread."""
        self._a.stop(drain)
        if self._thread is not None:
            self._thread.join(timeout)
            if self._error is not None:
                raise self._error
