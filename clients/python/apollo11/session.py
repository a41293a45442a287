"""The executor's connection to the main control (wire-v1 section 4).

A :class:`Session` is one registered connection: its timeouts, its
heartbeats, its requests awaiting replies and a bound on what it buffers.
:func:`handshake` makes one; :class:`Backoff` spaces the attempts.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Callable

from .codec import Message, parse_uint
from .connection import AsyncConnection, Welcome, register_message
from .errors import ConnectionLost, FrameTooLargeError, ProtocolError, ServerError
from .replies import SharedState, parse_state

log = logging.getLogger("apollo11.executor")

MAX_SLOTS = 65536
_MAX_TOKEN = 20 + 1 + 20  # task_id.version with 20-digit numbers


def heartbeat_slots(max_frame: int) -> int:
    """How many dispatches a heartbeat can list within ``max_frame`` when
    every number has 20 digits: the most slots worth registering."""
    fixed = len("type=heartbeat\nseq=") + 20 + len("\nrunning=")
    return max(1, min(MAX_SLOTS, (max_frame - fixed + 1) // (_MAX_TOKEN + 1)))


class Backoff:
    """The reconnect delay: doubles from lo up to hi, each drawn from [d/2, d]."""

    def __init__(self, lo: float, hi: float) -> None:
        self.lo, self.hi, self.cur = lo, hi, 0.0

    def next(self) -> float:
        self.cur = min(self.lo, self.hi) if self.cur == 0 else min(self.cur * 2, self.hi)
        return random.uniform(self.cur / 2, self.cur)

    def reset(self) -> None:
        self.cur = 0.0


class Session:
    """One registered connection."""

    def __init__(self, conn: AsyncConnection, welcome: Welcome, slots: int, reg: Message) -> None:
        self.conn = conn
        self.addr = ""  # the main control's address, for the logs
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

    def progress(self, m: Message) -> None:
        """Send ``progress``; a note too long for a frame is dropped, not the progress."""
        try:
            self.send(m)
        except FrameTooLargeError:
            del m["note"]
            self.send(m)
        except ConnectionLost:
            pass

    async def state_get(self, keys: tuple[str, ...]) -> SharedState:
        self.req += 1
        req = format(self.req, "x")
        fut: asyncio.Future[Message] = asyncio.get_running_loop().create_future()
        msg = Message("state_get", {"req": req})
        if keys:
            msg["keys"] = keys
        self.send(msg)
        self.waiters[req] = fut
        try:
            m = await fut
        finally:
            self.waiters.pop(req, None)
        if m.type == "error":
            raise ServerError(m.get("code") or "", m.get("message") or "")
        return parse_state(m)

    def answer(self, m: Message) -> bool:
        """Hand a reply to the request awaiting its ``req``; False when none does."""
        fut = self.waiters.pop(m.get("req") or "", None)
        if fut is None:
            return False
        if not fut.done():
            fut.set_result(m)
        return True

    def close(self) -> None:
        """Close the connection; requests still awaiting replies fail."""
        for fut in self.waiters.values():
            if not fut.done():
                fut.set_exception(ConnectionLost("connection lost before the reply"))
        self.conn.close()

    async def heartbeats(self, running: Callable[[], list[str]]) -> None:
        """Send ``heartbeat`` every ``heartbeat`` seconds, listing ``running()``."""
        seq = 0
        while True:
            await asyncio.sleep(self.heartbeat)
            seq += 1
            try:
                self.send(Message("heartbeat", {"seq": seq, "running": running()}))
            except (ConnectionLost, ProtocolError) as e:
                log.warning("cannot send heartbeat: %s", e)


async def handshake(addr: str, dial_timeout: float, executor_id: str, task_types: list[str], slots: int,
                    token: bytes | None) -> Session:
    """Connect and register; a refusal raises ServerError."""
    conn = await AsyncConnection.connect(addr, dial_timeout)
    try:
        assert conn.welcome is not None
        fit = min(slots, heartbeat_slots(conn.welcome.max_frame))
        if fit < slots:
            log.warning("registering %d slots, not %d: a heartbeat must fit max_frame %d",
                        fit, slots, conn.welcome.max_frame)
        conn.send(register_message(conn.welcome, executor_id, task_types, fit, token))
        while True:
            async with asyncio.timeout(dial_timeout):
                m = await conn.recv()
            if m.type == "registered":
                s = Session(conn, conn.welcome, fit, m)
                s.addr = addr
                return s
            if m.type == "error":  # not_leader carries the leader, if known, in fields
                raise ServerError(m.get("code") or "", m.get("message") or "",
                                  {k: v for k, v in m.items() if k not in ("type", "code", "message")})
    except BaseException:
        conn.close()
        raise


def started(tok: tuple[int, int]) -> Message:
    return Message("started", {"task_id": tok[0], "version": tok[1]})


def dispatch_token(m: Message) -> tuple[int, int] | None:
    """The ``(task_id, version)`` of a frame, or None (logged) when it has none."""
    i, v = parse_uint(m.get("task_id") or ""), parse_uint(m.get("version") or "")
    if i is None or v is None:
        log.warning("ignoring a %s frame without a dispatch token", m.type)
        return None
    return (i, v)
