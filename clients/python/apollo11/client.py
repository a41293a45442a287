"""The client for submitters and admin tools (wire-v1 sections 3 and 5).

:class:`AsyncClient` is the core: one connection, every request tagged
with a fresh ``req`` and pipelined, one reader task handing each reply to
its caller by ``req`` whatever the order. :class:`Client` is the blocking
API: the same client driven on an event loop in a background thread.

The client does not reconnect: when the connection fails every request in
flight, and every later one, raises :class:`ConnectionLost`; connect again.
A submit in flight then may or may not have made its task: submit again
with the same ``key`` to find out.
"""

from __future__ import annotations

import asyncio
import builtins
import logging
import math
import threading
from collections.abc import Coroutine, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from .codec import Message, parse_uint
from .connection import DEFAULT_ADDR, AsyncConnection, resolve_token
from .errors import ClientClosed, ConnectionLost, EncodeError, ReplyError, ServerError

log = logging.getLogger("apollo11.client")

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


class _Call:
    """A request waiting for its reply; a waiting submit also for ``done``."""

    __slots__ = ("reply", "done")

    def __init__(self, loop: asyncio.AbstractEventLoop, wait: bool) -> None:
        self.reply: asyncio.Future[Message] = loop.create_future()
        self.done: asyncio.Future[Message] | None = loop.create_future() if wait else None


class AsyncWatch:
    """A task submitted with ``wait=true``: ``await watch.done()`` for its end."""

    def __init__(self, client: AsyncClient, req: str, submitted: Submitted, done: asyncio.Future[Message]) -> None:
        self._client = client
        self._req = req
        self.submitted = submitted
        self._done = done

    @property
    def task_id(self) -> int:
        return self.submitted.task_id

    async def done(self) -> Done:
        """Wait for the task's end; ConnectionLost if the connection fails first."""
        return parse_done(await asyncio.shield(self._done))

    def close(self) -> None:
        """Stop waiting: a ``done`` arriving later is dropped."""
        self._client._forget(self._req)


def _fail(fut: asyncio.Future[Any] | None, err: BaseException) -> None:
    if fut is not None and not fut.done():
        fut.set_exception(err)
        fut.exception()  # retrieved: nobody may be waiting any more


class AsyncClient:
    """One connection to the main control, for use from one event loop."""

    def __init__(self, conn: AsyncConnection) -> None:
        self._conn = conn
        self._seq = 0
        self._pending: dict[str, _Call] = {}
        self._err: BaseException | None = None
        self._reader = asyncio.get_running_loop().create_task(self._read_loop())

    @classmethod
    async def connect(
        cls,
        addr: str = DEFAULT_ADDR,
        *,
        token: bytes | str | None = None,
        token_file: str | Path | None = None,
        name: str | None = None,
        timeout: float = 10.0,
    ) -> AsyncClient:
        """Connect, read ``welcome``, send ``hello`` (signed when asked) and
        wait for ``hello_ok``. A refusal raises ServerError (auth_failed...)."""
        tok = resolve_token(token, token_file)
        conn = await AsyncConnection.connect(addr, timeout)
        try:
            await conn.hello(tok, name, timeout)
        except BaseException:
            conn.close()
            raise
        return cls(conn)

    @property
    def max_frame(self) -> int:
        return self._conn.max_frame

    async def close(self) -> None:
        if self._err is None:
            self._stop(ClientClosed("client closed"))
        self._conn.close()
        self._reader.cancel()
        try:
            await self._reader
        except asyncio.CancelledError:
            pass
        await self._conn.wait_closed()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def _stop(self, err: BaseException) -> None:
        self._err = err
        for call in self._pending.values():
            _fail(call.reply, err)
            _fail(call.done, err)
        self._pending.clear()

    async def _read_loop(self) -> None:
        last: ServerError | None = None  # an error without req, usually before a close
        try:
            while True:
                m = await self._conn.recv()
                req = m.get("req")
                if req is None:
                    if m.type == "error":
                        last = ServerError(m.get("code") or "", m.get("message") or "")
                        log.warning("error from the main control: %s", last)
                    continue
                self._route(req, m)
        except asyncio.CancelledError:
            raise
        except Exception as e:
            err = ConnectionLost(f"connection to the main control lost: {e}" + (f" (after {last})" if last else ""))
            err.__cause__ = e
            if self._err is None:
                log.warning("%s", err)
                self._stop(err)
            self._conn.close()

    def _route(self, req: str, m: Message) -> None:
        call = self._pending.get(req)
        if call is None:
            log.debug("dropping a %s reply nobody waits for (req %s)", m.type, req)
            return
        if m.type == "done" and call.done is not None:
            if not call.reply.done():  # done before submitted: it stands for both
                call.reply.set_result(m)
            call.done.set_result(m)
            del self._pending[req]
            return
        if not call.reply.done():
            call.reply.set_result(m)
        if call.done is None or m.type != "submitted":
            if call.done is not None:
                _fail(call.done, ServerError(m.get("code") or "", m.get("message") or ""))
            del self._pending[req]

    def _forget(self, req: str) -> None:
        call = self._pending.pop(req, None)
        if call is not None:
            _fail(call.done, ClientClosed("no longer waiting"))

    def _start(self, msg: Message, wait: bool = False) -> tuple[str, _Call]:
        if self._err is not None:
            raise self._err
        self._seq += 1
        req = format(self._seq, "x")
        msg["req"] = req
        frame_msg = msg  # type first, req second would not matter: order carries no meaning
        call = _Call(asyncio.get_running_loop(), wait)
        self._conn.send(frame_msg)  # encode errors raise here, before registering
        self._pending[req] = call
        return req, call

    async def _reply(self, req: str, call: _Call) -> Message:
        try:
            await self._conn.drain()
            return await asyncio.shield(call.reply)
        except asyncio.CancelledError:
            self._forget(req)
            raise

    async def request(self, type: str, fields: Mapping[str, Any] | None = None, want: str | None = None) -> Message:
        """Send any request (``req`` is added) and return its reply. An
        ``error`` reply raises ServerError; ``want`` checks the reply type.
        This is the way to newer messages this client has no method for."""
        req, call = self._start(Message(type, fields))
        m = await self._reply(req, call)
        return _expect(m, type, want)

    async def submit(
        self,
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
    ) -> Submitted:
        """Submit a task; returns once it is durable. ``timeout`` (per
        attempt, from its start) and ``delay`` are in seconds. A full queue
        raises ServerError with ``queue_full`` true: retry later."""
        msg = submit_message(task_type, args, priority=priority, max_attempts=max_attempts, timeout=timeout,
                             delay=delay, key=key, trace_id=trace_id, depends_on=depends_on)
        req, call = self._start(msg)
        m = _expect(await self._reply(req, call), "submit", "submitted")
        return Submitted(m.uint("task_id"), m.boolean("duplicate", False))

    async def submit_watch(
        self,
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
    ) -> AsyncWatch:
        """Submit with ``wait=true``: returns once the task is durable, and
        the watch's ``done()`` waits for its end. With a known ``key`` this
        waits for that task: the way to wait again after a reconnect."""
        msg = submit_message(task_type, args, priority=priority, max_attempts=max_attempts, timeout=timeout,
                             delay=delay, key=key, trace_id=trace_id, depends_on=depends_on, wait=True)
        req, call = self._start(msg, wait=True)
        assert call.done is not None
        m = await self._reply(req, call)
        if m.type == "done":
            return AsyncWatch(self, req, Submitted(m.uint("task_id")), call.done)
        m = _expect(m, "submit", "submitted")
        return AsyncWatch(self, req, Submitted(m.uint("task_id"), m.boolean("duplicate", False)), call.done)

    async def submit_wait(self, task_type: str, args: Mapping[str, str] | None = None, **options: Any) -> Done:
        """Submit with ``wait=true`` and wait for the task's end (the
        options of :meth:`submit`)."""
        watch = await self.submit_watch(task_type, args, **options)
        try:
            return await watch.done()
        finally:
            watch.close()

    async def query(self, task_id: int) -> TaskState:
        return parse_task_state(await self.request("query", {"task_id": task_id}, "task_state"))

    async def cancel(self, task_id: int) -> None:
        """Cancel a task; an ended one raises ServerError illegal_transition."""
        await self.request("cancel", {"task_id": task_id}, "cancelled")

    async def list(self, state: str, limit: int | None = None, after: int | None = None) -> TaskPage:
        """One page of the ids of tasks in ``state``, ascending."""
        fields: dict[str, Any] = {"state": state}
        if limit is not None:
            fields["limit"] = limit
        if after is not None:
            fields["after"] = after
        m = await self.request("list", fields, "tasks")
        ids = []
        for raw in m.list("ids"):
            n = parse_uint(raw)
            if n is None:
                raise ReplyError(f"tasks: bad id {raw!r}")
            ids.append(n)
        return TaskPage(ids, m.uint("next") if "next" in m else None)

    async def list_all(self, state: str, page: int = 1000) -> builtins.list[int]:
        """Every id in ``state``, following ``next`` page after page."""
        ids: builtins.list[int] = []
        after = None
        while True:
            p = await self.list(state, page, after)
            ids.extend(p.ids)
            if p.next is None:
                return ids
            after = p.next

    async def stats(self) -> Stats:
        return parse_stats(await self.request("stats", None, "stats"))

    async def state_get(self, *keys: str) -> SharedState:
        """The shared state: every key, or the keys given (unset ones left out)."""
        return parse_state(await self.request("state_get", {"keys": keys} if keys else None, "state"))

    async def debug(self, on: bool) -> None:
        await self.request("debug", {"on": on}, "debug_ok")


def _expect(m: Message, what: str, want: str | None) -> Message:
    if m.type == "error":
        raise ServerError(m.get("code") or "", m.get("message") or "")
    if want is not None and m.type != want:
        raise ReplyError(f"{what}: expected {want}, got {m.type!r}")
    return m


T = TypeVar("T")


class _LoopThread:
    """An event loop on a daemon thread, for the blocking wrappers."""

    def __init__(self, name: str) -> None:
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()
        self.thread = threading.Thread(target=self._main, args=(ready,), name=name, daemon=True)
        self.thread.start()
        ready.wait()

    def _main(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.call_soon(ready.set)
        self.loop.run_forever()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None) -> T:
        fut = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return fut.result(timeout)
        except TimeoutError:
            fut.cancel()
            raise TimeoutError(f"no reply within {timeout}s") from None

    def stop(self) -> None:
        if self.loop.is_closed():
            return
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join()
        self.loop.close()


class Watch:
    """The blocking :class:`AsyncWatch`."""

    def __init__(self, client: Client, inner: AsyncWatch) -> None:
        self._client = client
        self._inner = inner
        self.submitted = inner.submitted

    @property
    def task_id(self) -> int:
        return self.submitted.task_id

    def done(self, timeout: float | None = None) -> Done:
        """Wait for the task's end; TimeoutError leaves the watch usable."""
        return self._client._lt.run(self._inner.done(), timeout)

    def close(self) -> None:
        self._client._lt.loop.call_soon_threadsafe(self._inner.close)


class Client:
    """The blocking client: each method waits for its reply, at most
    ``request_timeout`` seconds (None: forever) except waits for ``done``.
    Safe for use from many threads; their requests are pipelined."""

    def __init__(
        self,
        addr: str = DEFAULT_ADDR,
        *,
        token: bytes | str | None = None,
        token_file: str | Path | None = None,
        name: str | None = None,
        timeout: float = 10.0,
        request_timeout: float | None = 30.0,
    ) -> None:
        self.request_timeout = request_timeout
        self._lt = _LoopThread("apollo11-client")
        try:
            self._a: AsyncClient = self._lt.run(
                AsyncClient.connect(addr, token=token, token_file=token_file, name=name, timeout=timeout), None)
        except BaseException:
            self._lt.stop()
            raise

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        return self._lt.run(coro, self.request_timeout)

    def close(self) -> None:
        if not self._lt.loop.is_closed():
            self._lt.run(self._a.close(), 10.0)
            self._lt.stop()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def max_frame(self) -> int:
        return self._a.max_frame

    def request(self, type: str, fields: Mapping[str, Any] | None = None, want: str | None = None) -> Message:
        return self._run(self._a.request(type, fields, want))

    def submit(
        self,
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
    ) -> Submitted:
        """See :meth:`AsyncClient.submit`."""
        return self._run(self._a.submit(task_type, args, priority=priority, max_attempts=max_attempts, timeout=timeout,
                                        delay=delay, key=key, trace_id=trace_id, depends_on=depends_on))

    def submit_watch(
        self,
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
    ) -> Watch:
        """See :meth:`AsyncClient.submit_watch`."""
        inner = self._run(self._a.submit_watch(task_type, args, priority=priority, max_attempts=max_attempts,
                                               timeout=timeout, delay=delay, key=key, trace_id=trace_id,
                                               depends_on=depends_on))
        return Watch(self, inner)

    def submit_wait(self, task_type: str, args: Mapping[str, str] | None = None, *, wait_timeout: float | None = None,
                    **options: Any) -> Done:
        """Submit with ``wait=true`` and wait up to ``wait_timeout`` for the end."""
        watch = self.submit_watch(task_type, args, **options)
        try:
            return watch.done(wait_timeout)
        finally:
            watch.close()

    def query(self, task_id: int) -> TaskState:
        return self._run(self._a.query(task_id))

    def cancel(self, task_id: int) -> None:
        self._run(self._a.cancel(task_id))

    def list(self, state: str, limit: int | None = None, after: int | None = None) -> TaskPage:
        return self._run(self._a.list(state, limit, after))

    def list_all(self, state: str, page: int = 1000) -> builtins.list[int]:
        return self._run(self._a.list_all(state, page))

    def stats(self) -> Stats:
        return self._run(self._a.stats())

    def state_get(self, *keys: str) -> SharedState:
        return self._run(self._a.state_get(*keys))

    def debug(self, on: bool) -> None:
        self._run(self._a.debug(on))
