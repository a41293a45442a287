"""The v1.1 messages of protocol section 8: requeue, requests by filter
(requeue, cancel and purge), pause and resume of a task type, shared-state
repair, and the list of task types.

:class:`AdminAPI` adds them to :class:`~apollo11.AsyncClient` and
:class:`BlockingAdminAPI` to :class:`~apollo11.Client`. Send them only to
a main control whose ``features`` name their group (``admin``, ``types``);
the admin messages need ``admin`` to be True (the admin token, section
8.2), else they raise ServerError ``not_permitted``.
"""

from __future__ import annotations

from collections.abc import Coroutine, Iterable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from .codec import Message
from .errors import ReplyError, ServerError

T = TypeVar("T")


@dataclass(frozen=True)
class StateChanged:
    """The ``state_changed`` reply of ``state_set`` and ``state_del``."""

    key: str
    state_version: int  # the version after the request
    changed: bool


@dataclass(frozen=True)
class TypeInfo:
    """One task type of a ``type_page``."""

    name: str
    pending: int
    running: int
    paused: bool
    executors: int
    slots: int


@dataclass(frozen=True)
class TypePage:
    """The ``type_page`` reply: ``next`` is None on the last page."""

    types: list[TypeInfo]
    next: str | None


@dataclass(frozen=True)
class Requeued:
    """The ``requeued`` reply: the task runs again (``pending``), or waits
    for its dependencies (``waiting``)."""

    task_id: int
    state: str
    version: int


@dataclass(frozen=True)
class Matched:
    """The ``matched`` reply of the ``*_where`` requests: ``count`` tasks
    changed (or that would be, with ``dry_run``); ``next`` is not None
    when more tasks are left to look at: send again with ``after=next``."""

    count: int
    skipped: int
    next: int | None
    dry_run: bool


def filter_fields(task_type: str | None, state: Iterable[str] | None, error: str | None,
                  ended_before: int | None, ended_after: int | None, after: int | None,
                  limit: int | None) -> dict[str, Any]:
    """The filter keys of section 8.4 that are given."""
    f: dict[str, Any] = {}
    for k, v in (("task_type", task_type), ("error", error), ("ended_before", ended_before),
                 ("ended_after", ended_after), ("after", after), ("limit", limit)):
        if v is not None:
            f[k] = v
    if state is not None:
        f["state"] = [state] if isinstance(state, str) else list(state)
    return f


def parse_matched(m: Message) -> Matched:
    nxt = m.get("next")
    return Matched(m.uint("count"), m.uint("skipped", 0), None if nxt is None else m.uint("next"),
                   m.boolean("dry_run", False))


class Conflict(ServerError):
    """``state_set``/``state_del`` whose ``state_version`` was not the
    current one: nothing changed; ``state_version`` is the current one."""

    def __init__(self, message: str, state_version: int) -> None:
        super().__init__("conflict", message)
        self.state_version = state_version


def parse_state_changed(m: Message) -> StateChanged:
    return StateChanged(m.get("key") or "", m.uint("state_version"), m.boolean("changed", False))


def parse_type_page(m: Message) -> TypePage:
    types = []
    for i in range(m.uint("count")):
        p = f"type.{i}"
        name = m.get(p)
        if name is None:
            raise ReplyError(f"type_page: {p} is missing")
        types.append(TypeInfo(name, m.uint(p + ".pending", 0), m.uint(p + ".running", 0),
                              m.boolean(p + ".paused", False), m.uint(p + ".executors", 0),
                              m.uint(p + ".slots", 0)))
    return TypePage(types, m.get("next"))


class _Requester(Protocol):
    async def request(self, type: str, fields: Any = None, want: str | None = None) -> Message: ...


class AdminAPI:
    """The v1.1 requests of an :class:`~apollo11.AsyncClient`."""

    async def requeue(self: _Requester, task_id: int, *, keep_attempts: bool = False,
                      reason: str | None = None) -> Requeued:
        """Run a failed or cancelled task again, under its id. Another state
        raises ServerError ``illegal_transition``."""
        fields: dict[str, Any] = {"task_id": task_id}
        if keep_attempts:
            fields["keep_attempts"] = True
        if reason:
            fields["reason"] = reason
        m = await self.request("requeue", fields, "requeued")
        return Requeued(m.uint("task_id"), m.get("state") or "", m.uint("version"))

    async def requeue_where(self: _Requester, *, task_type: str | None = None, state: Iterable[str] | None = None,
                            error: str | None = None, ended_before: int | None = None,
                            ended_after: int | None = None, after: int | None = None, limit: int | None = None,
                            keep_attempts: bool = False, reason: str | None = None,
                            dry_run: bool = False) -> Matched:
        """Requeue the failed and cancelled tasks the filter matches (times
        in Unix milliseconds). Follow ``next`` for the rest."""
        f = filter_fields(task_type, state, error, ended_before, ended_after, after, limit)
        if keep_attempts:
            f["keep_attempts"] = True
        if reason:
            f["reason"] = reason
        return await _where(self, "requeue_where", f, dry_run)

    async def cancel_where(self: _Requester, *, task_type: str | None = None, state: Iterable[str] | None = None,
                           error: str | None = None, after: int | None = None, limit: int | None = None,
                           dry_run: bool = False) -> Matched:
        """Cancel the tasks not ended that the filter matches."""
        f = filter_fields(task_type, state, error, None, None, after, limit)
        return await _where(self, "cancel_where", f, dry_run)

    async def purge_where(self: _Requester, *, task_type: str | None = None, state: Iterable[str] | None = None,
                          error: str | None = None, ended_before: int | None = None,
                          ended_after: int | None = None, after: int | None = None, limit: int | None = None,
                          dry_run: bool = False) -> Matched:
        """Drop the ended tasks the filter matches at once."""
        f = filter_fields(task_type, state, error, ended_before, ended_after, after, limit)
        return await _where(self, "purge_where", f, dry_run)

    async def pause(self: _Requester, task_type: str) -> bool:
        """Pause a task type: none of its tasks is dispatched until
        :meth:`resume`. Returns whether it changed (False: already paused)."""
        return (await self.request("pause", {"task_type": task_type}, "paused")).boolean("changed", False)

    async def resume(self: _Requester, task_type: str) -> bool:
        """Resume a paused type. Returns whether it changed."""
        return (await self.request("resume", {"task_type": task_type}, "resumed")).boolean("changed", False)

    async def state_set(self: _Requester, key: str, value: str, state_version: int | None = None) -> StateChanged:
        """Set one shared-state key; with ``state_version``, only if it is
        the current version, else :class:`Conflict`."""
        fields: dict[str, Any] = {"key": key, "value": value}
        if state_version is not None:
            fields["state_version"] = state_version
        return parse_state_changed(await _cas(self, "state_set", fields))

    async def state_del(self: _Requester, key: str, state_version: int | None = None) -> StateChanged:
        """Delete one shared-state key (``changed`` False: it was not set);
        ``state_version`` as for :meth:`state_set`."""
        fields: dict[str, Any] = {"key": key}
        if state_version is not None:
            fields["state_version"] = state_version
        return parse_state_changed(await _cas(self, "state_del", fields))

    async def type_list(self: _Requester, after: str | None = None, limit: int | None = None) -> TypePage:
        """One page of the task types the main control knows, by name."""
        fields: dict[str, Any] = {}
        if after is not None:
            fields["after"] = after
        if limit is not None:
            fields["limit"] = limit
        return parse_type_page(await self.request("type_list", fields, "type_page"))

    async def type_list_all(self: _Requester) -> list[TypeInfo]:
        """Every task type, following ``next`` page after page."""
        out: list[TypeInfo] = []
        after = None
        while True:
            page = parse_type_page(await self.request("type_list", {"after": after} if after else None, "type_page"))
            out.extend(page.types)
            if page.next is None:
                return out
            after = page.next


async def _where(client: _Requester, typ: str, fields: dict[str, Any], dry_run: bool) -> Matched:
    if dry_run:
        fields["dry_run"] = True
    return parse_matched(await client.request(typ, fields, "matched"))


async def _cas(client: _Requester, typ: str, fields: dict[str, Any]) -> Message:
    """A state change whose ``conflict`` error raises :class:`Conflict`."""
    try:
        return await client.request(typ, fields, "state_changed")
    except ServerError as e:
        if e.code == "conflict" and e.fields.get("state_version", "").isdigit():
            raise Conflict(e.message, int(e.fields["state_version"])) from None
        raise


class _Runner(Protocol):
    _a: Any

    def _run(self, coro: Coroutine[Any, Any, T]) -> T: ...


class BlockingAdminAPI:
    """The v1.1 requests of a blocking :class:`~apollo11.Client`."""

    def requeue(self: _Runner, task_id: int, *, keep_attempts: bool = False, reason: str | None = None) -> Requeued:
        return self._run(self._a.requeue(task_id, keep_attempts=keep_attempts, reason=reason))

    def requeue_where(self: _Runner, **filter: Any) -> Matched:
        """See :meth:`AdminAPI.requeue_where`."""
        return self._run(self._a.requeue_where(**filter))

    def cancel_where(self: _Runner, **filter: Any) -> Matched:
        """See :meth:`AdminAPI.cancel_where`."""
        return self._run(self._a.cancel_where(**filter))

    def purge_where(self: _Runner, **filter: Any) -> Matched:
        """See :meth:`AdminAPI.purge_where`."""
        return self._run(self._a.purge_where(**filter))

    def pause(self: _Runner, task_type: str) -> bool:
        return self._run(self._a.pause(task_type))

    def resume(self: _Runner, task_type: str) -> bool:
        return self._run(self._a.resume(task_type))

    def state_set(self: _Runner, key: str, value: str, state_version: int | None = None) -> StateChanged:
        return self._run(self._a.state_set(key, value, state_version))

    def state_del(self: _Runner, key: str, state_version: int | None = None) -> StateChanged:
        return self._run(self._a.state_del(key, state_version))

    def type_list(self: _Runner, after: str | None = None, limit: int | None = None) -> TypePage:
        return self._run(self._a.type_list(after, limit))

    def type_list_all(self: _Runner) -> list[TypeInfo]:
        return self._run(self._a.type_list_all())
