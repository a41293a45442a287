"""The cluster group of protocol section 8.13: ``cluster_status``,
``cluster_add``, ``cluster_remove`` and ``cluster_transfer``.

:class:`ClusterAPI` adds them to :class:`~apollo11.AsyncClient` and
:class:`BlockingClusterAPI` to :class:`~apollo11.Client`. Only a cluster
member lists ``cluster`` in ``features``. ``cluster_status`` is answered
by every member; the changes need the leader and the admin token.

A change under way when the leader lost its leadership is answered
``unavailable``: it may yet have taken effect, so look at
``cluster_status`` before sending it again. A lost reply to
``cluster_add``, ``cluster_remove`` or ``cluster_transfer`` raises
OutcomeUnknown for the same reason. The client never sends a cluster
change twice: a second ``cluster_add`` could undo another admin's change
made in between.
"""

from __future__ import annotations

from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from .codec import Message
from .errors import OutcomeUnknown, ReplyError

T = TypeVar("T")


@dataclass(frozen=True)
class ClusterMember:
    """One member of the configuration; ``match_index`` and ``lag`` come
    from the leader only, and only for members it knows them of."""

    id: str  # its client address
    raft: str
    voter: bool
    match_index: int | None = None
    lag: int | None = None


@dataclass(frozen=True)
class ClusterStatus:
    """A member's ``cluster_status_ok``."""

    id: str  # the member that answered
    role: str  # leader, follower or candidate
    leader: str | None  # None when the member knows none
    term: int
    commit_index: int
    applied_index: int
    members: list[ClusterMember]


def parse_cluster_status(m: Message) -> ClusterStatus:
    members = []
    for i in range(m.uint("count")):
        p = f"member.{i}."
        mid = m.get(p + "id")
        if mid is None:  # count is the server's word; the frame bounds what follows
            raise ReplyError(f"cluster_status_ok: count={m.get('count')} but no {p}id")
        members.append(ClusterMember(mid, m.get(p + "raft") or "", m.boolean(p + "voter", False),
                                     m.uint(p + "match_index") if p + "match_index" in m else None,
                                     m.uint(p + "lag") if p + "lag" in m else None))
    return ClusterStatus(m.get("id") or "", m.get("role") or "", m.get("leader") or None, m.uint("term"),
                         m.uint("commit_index"), m.uint("applied_index"), members)


class _Requester(Protocol):
    async def request(self, type: str, fields: Any = None, want: str | None = None) -> Message: ...


async def _one_shot(change: Coroutine[Any, Any, Any]) -> None:
    """Await a cluster change; a lost reply says where to look."""
    try:
        await change
    except OutcomeUnknown as e:
        raise OutcomeUnknown(f"{e}: check `apollo11 cluster status` before sending it again") from e


class ClusterAPI:
    """The cluster requests of an :class:`~apollo11.AsyncClient`."""

    async def cluster_status(self: _Requester) -> ClusterStatus:
        """The connected member's view of the cluster."""
        return parse_cluster_status(await self.request("cluster_status", None, "cluster_status_ok"))

    async def cluster_add(self: _Requester, id: str, raft: str, voter: bool = True) -> None:
        """Add a member (``id`` its client address, ``raft`` its Raft one), or
        change one's address and voting; returns once committed."""
        await _one_shot(self.request("cluster_add", {"id": id, "raft": raft, "voter": voter}, "cluster_ok"))

    async def cluster_remove(self: _Requester, id: str) -> None:
        """Remove a member; removing the leader makes it step down after its reply."""
        await _one_shot(self.request("cluster_remove", {"id": id}, "cluster_ok"))

    async def cluster_transfer(self: _Requester, id: str | None = None) -> None:
        """Hand the leadership to the voter ``id``, or the most up-to-date
        one. The old leader closes its connections as it steps down, so the
        reply may be lost (OutcomeUnknown): ``cluster_status`` shows the new leader."""
        await self.request("cluster_transfer", {"id": id} if id else None, "cluster_ok")


class _Runner(Protocol):
    _a: Any

    def _run(self, coro: Coroutine[Any, Any, T]) -> T: ...


class BlockingClusterAPI:
    """The cluster requests of a blocking :class:`~apollo11.Client`."""

    def cluster_status(self: _Runner) -> ClusterStatus:
        return self._run(self._a.cluster_status())

    def cluster_add(self: _Runner, id: str, raft: str, voter: bool = True) -> None:
        self._run(self._a.cluster_add(id, raft, voter))

    def cluster_remove(self: _Runner, id: str) -> None:
        self._run(self._a.cluster_remove(id))

    def cluster_transfer(self: _Runner, id: str | None = None) -> None:
        self._run(self._a.cluster_transfer(id))
