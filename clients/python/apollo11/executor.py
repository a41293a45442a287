"""The executor: runs tasks of the types it registers (wire-v1 section 4).

:class:`AsyncExecutor` is the core. It connects, registers its task types
and slots (signed with the token when asked), sends ``heartbeat`` with
``running=`` every ``heartbeat_ms``, answers each ``task`` with
``started`` and runs its handler, sends ``result`` and keeps it until its
``result_ack``. It reconnects after any failure, with exponential backoff
and jitter, and then sends ``started`` again for handlers still running
and every unacknowledged result. ``stop()`` drains: no new task, running
handlers get ``drain_timeout`` to finish, then ``bye``.

Given a cluster's members (protocol section 8.13) it registers with the
leader: a follower's ``not_leader`` naming one of its addresses sends it
there at once, any other failure to the next address after the backoff.
After a lost connection it registers with the next member and, as after a
restart, lists its running tasks (``started``, then ``running=``) and
sends its unacknowledged results again.

This module holds the life cycle and the reconnect loop; running tasks is
:mod:`apollo11.runner`, one connection is :mod:`apollo11.session`, and
what a handler sees is :mod:`apollo11.task`.
:class:`Executor` is the blocking API: the same core on its own loop.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import socket
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .codec import Message
from .connection import DEFAULT_ADDR, resolve_token
from .errors import ConnectionLost, ProtocolError, ServerError
from .failover import AddrList
from .replies import SharedState
from .runner import MAX_ERROR_TEXT, Runner
from .session import MAX_SLOTS, Backoff, Session, handshake, heartbeat_slots
from .task import Failure, Handler, HandlerReturn, Result, Task

__all__ = [
    "AsyncExecutor", "Executor", "Failure", "Handler", "HandlerReturn", "MAX_ERROR_TEXT", "MAX_SLOTS", "Result",
    "Task", "default_id", "heartbeat_slots",
]

log = logging.getLogger("apollo11.executor")

_ID = re.compile(r"[A-Za-z0-9_.:\-]{1,128}")


def default_id() -> str:
    host = re.sub(r"[^A-Za-z0-9_.:\-]", "-", socket.gethostname())[:100] or "host"
    return f"{host}-py-{os.getpid()}"


class AsyncExecutor:
    """The executor core; ``await run()`` until ``stop()``."""

    def __init__(
        self,
        addr: str | Sequence[str] = DEFAULT_ADDR,
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
        self.addrs = AddrList(addr)  # a leader hint is followed only to one of these
        self.addr = str(self.addrs)
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
        self._session: Session | None = None
        self._runner = Runner(self, self._handlers)
        self._closing = False  # run() is ending: no more connections
        self._stop_drain: bool | None = None  # set by stop(): whether to drain
        self._stop_ev: asyncio.Event | None = None
        self._registered: asyncio.Event | None = None

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
        self._registered = asyncio.Event()
        self._runner.open(self.slots)
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
            self._runner.close()

    async def _shutdown(self, drain: bool) -> None:
        await self._runner.drain(drain, self.drain_timeout)
        s = self._session
        if s is not None:
            try:
                s.send(Message("bye", {"reason": "shutdown"}))
                async with asyncio.timeout(2.0):
                    await s.conn.drain()
                    await s.bye_ack.wait()
            except (ConnectionLost, TimeoutError) as e:
                log.info("no bye_ack: %s", e or "timeout")

    # ---- connections

    async def _connect_loop(self) -> None:
        backoff = Backoff(self.backoff_min, self.backoff_max)
        addr, hops = self.addrs.first, 0
        while not self._closing:
            try:
                s = await handshake(addr, self.dial_timeout, self.executor_id, sorted(self._handlers),
                                    self.slots, self.token)
            except Exception as e:  # every failure to register is retried
                source, addr = addr, self.addrs.after(addr)
                if isinstance(e, ServerError) and e.code == "not_leader":
                    hint = e.fields.get("leader")
                    if self.addrs.follow(source, hint):
                        addr = hint or addr
                        # At once, up to once per address in a row: two
                        # stale followers could name each other.
                        if hops < len(self.addrs):
                            hops += 1
                            log.info("following the leader %s named by %s", addr, source)
                            continue
                hops = 0
                level = logging.ERROR if isinstance(e, ServerError) and e.code == "auth_failed" else logging.WARNING
                log.log(level, "cannot register with %s: %s", source, e)
                await asyncio.sleep(backoff.next())
                continue
            hops = 0
            if self._closing:
                s.conn.close()
                return
            # Back within half the timeout a restarted main control waits.
            backoff.hi = min(self.backoff_max, s.timeout / 2)
            began = time.monotonic()
            err = await self._serve(s)
            log.warning("connection to the main control at %s lost: %s", addr, err)
            addr = self.addrs.after(addr)  # a cluster's leader may be gone: the next member
            if time.monotonic() - began >= min(10.0, backoff.hi):
                backoff.reset()
            await asyncio.sleep(backoff.next())

    async def _serve(self, s: Session) -> BaseException | str:
        hb = asyncio.create_task(s.heartbeats(self._runner.running))
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
            s.close()

    def _activate(self, s: Session) -> None:
        self._runner.resume(s)
        self._session = s
        self.registrations += 1
        assert self._registered is not None
        self._registered.set()
        log.info("registered with %s as %s: %d slots, heartbeat %ss, %d running, %d results re-sent",
                 s.addr, self.executor_id, s.slots, s.heartbeat, len(self._runner.runs), len(self._runner.unacked))

    def _handle(self, s: Session, m: Message) -> None:
        t = m.type
        if t == "task":
            self._runner.on_task(s, m)
        elif t == "cancel":
            self._runner.on_cancel(m)
        elif t == "result_ack":
            self._runner.on_result_ack(m)
        elif t in ("state", "error") and s.answer(m):
            pass
        elif t == "error":
            log.warning("error from the main control: %s %s", m.get("code"), m.get("message") or "")
        elif t == "bye_ack":
            s.bye_ack.set()

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
        if self._session is not None:
            self._session.progress(m)

    async def _state_get(self, keys: tuple[str, ...]) -> SharedState:
        s = self._session
        if s is None:
            raise ConnectionLost("not connected to the main control")
        return await s.state_get(keys)


class Executor:
    """The blocking executor: ``run()`` blocks until ``stop()`` (from
    another thread or a handler); ``start()`` runs it on a thread."""

    def __init__(self, addr: str | Sequence[str] = DEFAULT_ADDR, **options: Any) -> None:
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
