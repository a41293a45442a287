"""The client for submitters and admin tools (wire-v1 sections 3 and 5).

:class:`AsyncClient` is the core: one connection, every request tagged
with a fresh ``req`` and pipelined, one reader task handing each reply to
its caller by ``req`` whatever the order (that plumbing is
:mod:`apollo11.rpc`; the reply types are :mod:`apollo11.replies`).
:class:`Client` is the blocking API: the same client driven on an event
loop in a background thread.

Given the members of a cluster (protocol section 8.13) the client finds
the leader, following a follower's leader hint only to one of its own
addresses, and connects again when its connection is lost: reads and
keyed submits are sent again on the next connection, other requests in
flight raise :class:`OutcomeUnknown`. Given one address it does not
reconnect unless asked: when the connection fails every request in
flight, and every later one, raises :class:`ConnectionLost`.
"""

from __future__ import annotations

import asyncio
import builtins
from collections.abc import Coroutine, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .admin import AdminAPI, BlockingAdminAPI
from .cluster import BlockingClusterAPI, ClusterAPI
from .codec import Message
from .connection import DEFAULT_ADDR, AsyncConnection, resolve_token
from .errors import ConnectionLost, OutcomeUnknown, ServerError
from .failover import BACKOFF_MAX, BACKOFF_MIN, GIVE_UP_AFTER, AddrList, Finder, Follower, Link
from .replies import (
    STATES,
    TERMINAL,
    Done,
    SharedState,
    Stats,
    Submitted,
    TaskPage,
    TaskState,
    millis,
    parse_done,
    parse_page,
    parse_state,
    parse_stats,
    parse_task_state,
    submit_message,
)
from .rpc import MAX_WAITING, LoopThread, Pipelined, T, expect

__all__ = [
    "STATES", "TERMINAL", "AsyncClient", "AsyncWatch", "Client", "Done", "SharedState", "Stats", "Submitted",
    "TaskPage", "TaskState", "Watch", "millis", "parse_done", "parse_state", "parse_stats", "parse_task_state",
    "submit_message",
]


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
        """Wait for the task's end. When the connection is lost and the client
        reconnects, it goes on by querying the task (:meth:`AsyncClient.wait`);
        else ConnectionLost."""
        try:
            return parse_done(await asyncio.shield(self._done))
        except OutcomeUnknown:
            raise
        except ConnectionLost:
            if self._client._link is None or self._client._err is not None:
                raise
        return await self._client.wait(self.task_id)

    def close(self) -> None:
        """Stop waiting: a ``done`` arriving later is dropped."""
        self._client._forget(self._req)


class AsyncClient(AdminAPI, ClusterAPI, Pipelined):
    """One connection to the main control, for use from one event loop."""

    @classmethod
    async def connect(
        cls,
        addr: str | Sequence[str] = DEFAULT_ADDR,
        *,
        token: bytes | str | None = None,
        token_file: str | Path | None = None,
        name: str | None = None,
        timeout: float = 10.0,
        admin_token: bytes | str | None = None,
        admin_token_file: str | Path | None = None,
        reconnect: bool | None = None,
        reconnect_min: float = BACKOFF_MIN,
        reconnect_max: float = BACKOFF_MAX,
        give_up_after: float | None = GIVE_UP_AFTER,
        max_waiting: int = MAX_WAITING,
    ) -> AsyncClient:
        """Connect, read ``welcome``, send ``hello`` (signed when asked) and
        wait for ``hello_ok``. A refusal raises ServerError (auth_failed...).
        ``admin_token`` proves the admin token of a main control run with
        ``--admin-token-file`` (section 8.2); ``admin`` then is True.

        ``addr`` is one ``host:port``, or a cluster's members: a list or a
        comma-separated string. The client connects to the one answering
        ``role=leader``, following a follower's ``leader`` hint only when it
        is one of these; while the members reached have no leader it tries
        again for up to ``timeout`` seconds, then raises NoLeader
        (LeaderOutside when the last pass found only a leader that is not
        listed). ``reconnect`` (default: on when several addresses are
        given) connects again after a lost connection, waiting
        ``reconnect_min`` doubling up to ``reconnect_max`` seconds between
        passes over the addresses, until ``give_up_after`` seconds (60 by
        default; None: for ever) without a connection: then every request
        raises ConnectionLost, so that no wait lasts for ever. Meanwhile
        requests wait for the connection, at most ``max_waiting`` of them;
        more raise ConnectionLost at once."""
        addrs = AddrList(addr)
        if max_waiting < 1:
            raise ValueError("max_waiting: want at least 1")
        tok = resolve_token(token, token_file)
        admin_tok = resolve_token(admin_token, admin_token_file)

        async def dial(a: str) -> tuple[AsyncConnection, Message]:
            conn = await AsyncConnection.connect(a, timeout)
            try:
                ok = await conn.hello(tok, name, timeout, admin_token=admin_tok)
            except ServerError as e:
                conn.close()
                if e.code == "not_leader":
                    raise Follower(a, e.fields.get("leader")) from None
                raise
            except BaseException:
                conn.close()
                raise
            if ok.get("role") not in (None, "", "leader"):  # a follower or a candidate
                raise Follower(a, ok.get("leader"), conn)
            return conn, ok

        finder = Finder(addrs, dial)
        link = Link(finder, reconnect_min, reconnect_max, give_up_after)
        at, (conn, ok) = await finder.find(timeout)
        c = cls(conn, at, link if (len(addrs) > 1 if reconnect is None else reconnect) else None, max_waiting)
        c._adopted(conn, ok)
        return c

    def _adopted(self, conn: AsyncConnection, ok: Message) -> None:
        assert conn.welcome is not None
        self.features = conn.welcome.features
        self.admin = ok.get("admin") == "true"

    #: The optional v1.1 groups the main control speaks (``welcome``'s
    #: ``features``): send a group's messages only when it is listed.
    features: tuple[str, ...] = ()
    #: Whether this connection may send the admin messages: the main
    #: control has no admin token, or ``admin_token`` proved it.
    admin: bool = False

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
        m = expect(await self._reply(req, call), "submit", "submitted")
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
        m = expect(m, "submit", "submitted")
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

    async def wait(self, task_id: int) -> Done:
        """Wait for any task's end by querying it: at once, then every 50 ms
        growing to 1 s. It goes on across reconnects."""
        delay = 0.05
        while True:
            st = await self.query(task_id)
            if st.state in TERMINAL:
                return Done(st.task_id, st.state, st.out, st.error)
            await asyncio.sleep(delay)
            delay = min(2 * delay, 1.0)

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
        return parse_page(await self.request("list", fields, "tasks"))

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


class Client(BlockingAdminAPI, BlockingClusterAPI):
    """The blocking client: each method waits for its reply, at most
    ``request_timeout`` seconds (None: forever) except waits for ``done``.
    Safe for use from many threads; their requests are pipelined."""

    def __init__(
        self,
        addr: str | Sequence[str] = DEFAULT_ADDR,
        *,
        request_timeout: float | None = 30.0,
        **options: Any,
    ) -> None:
        """See :meth:`AsyncClient.connect` for ``addr`` and the options."""
        self.request_timeout = request_timeout
        self._lt = LoopThread("apollo11-client")
        try:
            self._a: AsyncClient = self._lt.run(AsyncClient.connect(addr, **options), None)
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

    @property
    def features(self) -> tuple[str, ...]:
        return self._a.features

    @property
    def admin(self) -> bool:
        return self._a.admin

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

    def wait(self, task_id: int, timeout: float | None = None) -> Done:
        """See :meth:`AsyncClient.wait`; ``timeout`` bounds the whole wait."""
        return self._lt.run(self._a.wait(task_id), timeout)

    @property
    def address(self) -> str | None:
        """The main control connected to; None while reconnecting."""
        return self._a.address

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
