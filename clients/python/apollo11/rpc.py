"""The client's request plumbing: pipelined requests matched by ``req``.

:class:`Pipelined` owns one connection: every request gets a fresh
``req`` and is sent at once, and one reader task hands each reply to its
caller by ``req``, whatever the order. A submit with ``wait=true`` keeps
its entry after ``submitted``, for the ``done`` notice. :class:`LoopThread`
runs an event loop on a thread for the blocking wrappers.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Coroutine, Mapping
from typing import Any, Self, TypeVar

from .codec import Message
from .connection import AsyncConnection
from .errors import ClientClosed, ConnectionLost, ReplyError, ServerError

log = logging.getLogger("apollo11.client")


class _Call:
    """A request waiting for its reply; a waiting submit also for ``done``."""

    __slots__ = ("reply", "done")

    def __init__(self, loop: asyncio.AbstractEventLoop, wait: bool) -> None:
        self.reply: asyncio.Future[Message] = loop.create_future()
        self.done: asyncio.Future[Message] | None = loop.create_future() if wait else None


def _fail(fut: asyncio.Future[Any] | None, err: BaseException) -> None:
    if fut is not None and not fut.done():
        fut.set_exception(err)
        fut.exception()  # retrieved: nobody may be waiting any more


def expect(m: Message, what: str, want: str | None) -> Message:
    """``m`` itself; an ``error`` raises ServerError, another type than ``want`` ReplyError."""
    if m.type == "error":
        extra = {k: v for k, v in m.items() if k not in ("type", "req", "code", "message")}
        raise ServerError(m.get("code") or "", m.get("message") or "", extra)
    if want is not None and m.type != want:
        raise ReplyError(f"{what}: expected {want}, got {m.type!r}")
    return m


class Pipelined:
    """Requests pipelined over one connection, for use from one event loop."""

    def __init__(self, conn: AsyncConnection) -> None:
        self._conn = conn
        self._seq = 0
        self._pending: dict[str, _Call] = {}
        self._err: BaseException | None = None
        self._reader = asyncio.get_running_loop().create_task(self._read_loop())

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

    async def __aenter__(self) -> Self:
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
        call = _Call(asyncio.get_running_loop(), wait)
        self._conn.send(msg)  # encode errors raise here, before registering
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
        return expect(m, type, want)


T = TypeVar("T")


class LoopThread:
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
