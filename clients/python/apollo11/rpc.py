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

from .codec import Message, encode_frame
from .connection import AsyncConnection
from .errors import ClientClosed, ConnectionLost, OutcomeUnknown, ProtocolError, ReplyError, ServerError
from .failover import Link

log = logging.getLogger("apollo11.client")


class _Call:
    """A request waiting for its reply; a waiting submit also for ``done``.

    ``resend`` says the request may be sent again on the next connection
    when its reply was lost with the connection; ``bounced`` that a
    follower refused it with ``not_leader`` (it changed nothing, so it is
    sent once more); ``sent`` that it went out on the current connection."""

    __slots__ = ("reply", "done", "msg", "resend", "bounced", "sent", "seq")

    def __init__(self, loop: asyncio.AbstractEventLoop, wait: bool, msg: Message, seq: int) -> None:
        self.reply: asyncio.Future[Message] = loop.create_future()
        self.done: asyncio.Future[Message] | None = loop.create_future() if wait else None
        self.msg, self.seq = msg, seq
        self.resend = resendable(msg)
        self.bounced = self.sent = False


# Requests that do the same when sent twice: after a lost connection they
# are sent again on the next one. Others fail with OutcomeUnknown. pause
# and resume leave the same state when sent twice (only ``changed`` may
# read false); cluster_add is not here, as a second one could undo another
# admin's change made in between.
_RESENDABLE = frozenset({"query", "list", "stats", "state_get", "debug", "type_list", "cluster_status",
                         "run_query", "run_list", "schedule_list", "pause", "resume"})

#: How many requests may wait for a connection while the client reconnects;
#: more fail with ConnectionLost, so that a client cut off from every
#: member does not pile up requests without bound.
MAX_WAITING = 10_000

#: After a ``not_leader``, how long the client waits for the answers to the
#: requests it sent before it on that connection, at most: a follower
#: answers at once, so this only bounds a member that does not answer.
BOUNCE_GRACE = 5.0


def resendable(msg: Message) -> bool:
    """Whether ``msg`` may be sent again after its reply was lost: reads,
    and a submit with a ``key`` (a second one finds the first's task)."""
    if msg.type in ("submit", "run_submit"):
        return "key" in msg
    if msg.type in ("requeue_where", "cancel_where", "purge_where"):
        return msg.get("dry_run") == "true"
    return msg.type in _RESENDABLE


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
    """Requests pipelined over one connection, for use from one event loop.

    With a :class:`~apollo11.failover.Link` it connects again when the
    connection is lost (protocol section 8.13): requests safe to send twice
    wait for the next connection, the others fail with OutcomeUnknown, and
    a ``not_leader`` refusal sends the client to the leader it names when
    that is one of its addresses."""

    def __init__(self, conn: AsyncConnection, addr: str = "", link: Link | None = None,
                 max_waiting: int = MAX_WAITING) -> None:
        self._conn: AsyncConnection | None = conn
        self._max_waiting = max_waiting
        self._bounced: ConnectionLost | None = None  # set once the connection refused a request
        self._at = addr  # the address of the latest connection
        self._hint = ""  # the leader a not_leader named, to dial first
        self._max_frame = conn.max_frame
        self._link = link
        self._seq = 0
        self._pending: dict[str, _Call] = {}
        self._err: BaseException | None = None
        self._reconnecting: asyncio.Task[None] | None = None
        self._reader = asyncio.get_running_loop().create_task(self._read_loop(conn))

    @property
    def max_frame(self) -> int:
        return self._max_frame

    @property
    def address(self) -> str | None:
        """The address of the main control connected to, None while reconnecting."""
        return None if self._conn is None or self._bounced is not None else self._at

    async def close(self) -> None:
        if self._err is None:
            self._stop(ClientClosed("client closed"))
        for task in (self._reconnecting, self._reader):
            if task is not None:
                task.cancel()
                try:
                    await task
                except asyncio.CancelledError:
                    pass
        if self._conn is not None:
            self._conn.close()
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

    async def _read_loop(self, conn: AsyncConnection) -> None:
        last: ServerError | None = None  # an error without req, usually before a close
        try:
            while True:
                m = await conn.recv()
                req = m.get("req")
                if req is None:
                    if m.type == "error":
                        last = ServerError(m.get("code") or "", m.get("message") or "")
                        log.warning("error from the main control: %s", last)
                    continue
                if m.type == "error" and m.get("code") == "not_leader" and self._link is not None \
                        and req in self._pending:
                    self._bounce(conn, req, m)
                else:
                    self._route(req, m)
                if self._bounced is not None and conn is self._conn and not self._unanswered():
                    self._lost(conn, self._bounced)
                    return
        except asyncio.CancelledError:
            raise
        except Exception as e:
            err = ConnectionLost(f"connection to the main control lost: {e}" + (f" (after {last})" if last else ""))
            err.__cause__ = e
            self._lost(conn, err)

    def _bounce(self, conn: AsyncConnection, req: str, m: Message) -> None:
        """A follower refused ``req``: it changed nothing, so it waits for the
        leader, dialled first when the follower names one of our addresses.
        The connection is left once the requests sent before the refusal
        have their answers: the member answers each by the role it had when
        it arrived, and may have served some."""
        assert self._link is not None
        self._pending[req].bounced = True
        if self._bounced is not None:
            return
        source, hint = self._at, m.get("leader")
        if self._link.addrs.follow(source, hint):
            self._hint = hint or ""
        self._bounced = err = ConnectionLost(f"{source} is not the leader: {m.get('message') or 'not_leader'}")

        def give_up() -> None:
            if self._bounced is err:  # still waiting for those answers
                self._lost(conn, err)
        asyncio.get_running_loop().call_later(BOUNCE_GRACE, give_up)

    def _unanswered(self) -> bool:
        """Whether a request sent on the connection still waits for its reply
        (a watch past its ``submitted`` does not count: its wait is resumed)."""
        return any(c.sent and not c.bounced and not c.reply.done() for c in self._pending.values())

    def _lost(self, conn: AsyncConnection, err: ConnectionLost) -> None:
        """The end of ``conn``: without a link the client ends; with one,
        requests safe to send again wait for the next connection and the
        others fail now, then reconnecting starts."""
        conn.close()
        if conn is not self._conn or self._err is not None:
            return
        self._conn, self._bounced = None, None
        if self._link is None:
            log.warning("%s", err)
            self._stop(err)
            return
        log.warning("%s: reconnecting", err)
        for req, call in list(self._pending.items()):
            if not call.sent:
                continue
            call.sent = False
            if call.bounced or call.resend:
                continue
            del self._pending[req]
            if call.reply.done():
                # A watch past its submitted: the task exists, the wait is lost.
                _fail(call.done, ConnectionLost(f"{err}: the wait for the task's end was lost"))
                continue
            unknown = OutcomeUnknown(f"{err}: no reply to {call.msg.type}, which may have been acted on")
            unknown.__cause__ = err.__cause__
            _fail(call.reply, unknown)
            _fail(call.done, unknown)
        self._reconnecting = asyncio.get_running_loop().create_task(self._reconnect(err))

    async def _reconnect(self, cause: ConnectionLost) -> None:
        assert self._link is not None
        try:
            hint, self._hint = self._hint, ""
            addr, (conn, ok) = await self._link.reconnect(self._at, hint, cause)
        except ConnectionLost as e:
            log.warning("%s", e)
            if self._err is None:
                self._stop(e)
            return
        if self._err is not None:
            conn.close()
            return
        self._adopt(addr, conn, ok)

    def _adopt(self, addr: str, conn: AsyncConnection, ok: Message) -> None:
        """Make ``conn`` the connection and send the requests waiting for it,
        in their first order."""
        self._conn, self._max_frame, self._at = conn, conn.max_frame, addr
        self._adopted(conn, ok)
        self._reader = asyncio.get_running_loop().create_task(self._read_loop(conn))
        for req, call in sorted(self._pending.items(), key=lambda rc: rc[1].seq):
            if call.sent:
                continue
            call.bounced = False  # sent once more: lost again, it is as unsafe as before
            try:
                conn.send(call.msg)
            except ConnectionLost:
                break  # the reader sees the loss, and these wait for the next one
            except ProtocolError as e:  # the new main control takes smaller frames
                del self._pending[req]
                _fail(call.reply, e)
                _fail(call.done, e)
                continue
            call.sent = True
        log.info("connected to the main control at %s", addr)

    def _adopted(self, conn: AsyncConnection, ok: Message) -> None:
        """A hook: a new connection's ``welcome`` and ``hello_ok``."""

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
        if call.done is not None and m.type == "submitted":
            call.resend = False  # the task exists: a lost wait is resumed by its id, not a second submit
            return
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
        call = _Call(asyncio.get_running_loop(), wait, msg, self._seq)
        if self._conn is None or self._bounced is not None:
            encode_frame(msg, self._max_frame)  # encode errors raise now; it goes out once connected
            if len(self._pending) >= self._max_waiting:
                raise ConnectionLost(f"{len(self._pending)} requests already wait for a connection to the main "
                                     f"control (the limit, max_waiting): {msg.type} not sent")
        else:
            try:
                self._conn.send(msg)  # encode errors raise here, before registering
                call.sent = True
            except ConnectionLost:
                if self._link is None:
                    raise  # with a link, it goes out on the next connection
        self._pending[req] = call
        return req, call

    async def _reply(self, req: str, call: _Call) -> Message:
        try:
            if call.sent and self._conn is not None and self._bounced is None:
                try:
                    await self._conn.drain()
                except ConnectionLost:
                    if self._link is None:
                        raise  # with a link, the reader handles the loss
            return await asyncio.shield(call.reply)
        except asyncio.CancelledError:
            self._forget(req)
            raise

    async def request(self, type: str, fields: Mapping[str, Any] | None = None, want: str | None = None) -> Message:
        """Send any request (``req`` is added) and return its reply. An
        ``error`` reply raises ServerError; ``want`` checks the reply type.
        This is the way to newer messages this client has no method for.
        After a lost connection, reads are sent again (see :func:`resendable`);
        other requests raise OutcomeUnknown."""
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
