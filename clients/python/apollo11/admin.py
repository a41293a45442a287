"""The v1.1 messages of protocol section 8: requeue and the requests by
filter (requeue, cancel and purge).

:class:`AdminAPI` adds them to :class:`~apollo11.AsyncClient` and
:class:`BlockingAdminAPI` to :class:`~apollo11.Client`. Send them only to
a main control whose ``features`` name their group (``admin``); they
need ``admin`` to be True (the admin token, section 8.2), else they raise
ServerError ``not_permitted``.
"""

from __future__ import annotations

from collections.abc import Coroutine, Iterable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from .codec import Message

T = TypeVar("T")


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

async def _where(client: _Requester, typ: str, fields: dict[str, Any], dry_run: bool) -> Matched:
    if dry_run:
        fields["dry_run"] = True
    return parse_matched(await client.request(typ, fields, "matched"))


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
