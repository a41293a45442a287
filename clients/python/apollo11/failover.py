"""The main control addresses and the search for a cluster's leader
(protocol section 8.13).

A client or executor is given one address, or the members of a cluster.
Only the leader serves. A follower's ``hello_ok`` (``role``) or its
``not_leader`` refusal may name the leader in ``leader=``: that hint is
followed only when it is one of the configured addresses, so that a stale
or rogue server cannot steer a peer, and its tasks, to a host the
operator never named. :class:`AddrList` holds that rule;
:func:`find_leader` makes the passes over the addresses.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Generic, TypeVar

from .connection import split_addr
from .errors import ConnectionLost, LeaderOutside, NoLeader
from .session import Backoff

log = logging.getLogger("apollo11")

S = TypeVar("S")

#: The delays between passes over the addresses, as apollo11's Go client
#: waits: from 100 ms, doubling up to 5 s, with jitter.
BACKOFF_MIN, BACKOFF_MAX = 0.1, 5.0

#: How long a client goes on reconnecting without a connection, by
#: default, before every request fails with ConnectionLost: a finite
#: default, so that no call waits for ever while no leader is reachable.
GIVE_UP_AFTER = 60.0

FOLLOW, OUTSIDE, NO_HINT = "follow", "outside", "none"


class AddrList:
    """An ordered set of ``host:port`` addresses, matched exactly as given."""

    def __init__(self, addrs: str | Iterable[str]) -> None:
        items = addrs.split(",") if isinstance(addrs, str) else list(addrs)
        self.items: list[str] = []
        for a in items:
            if not isinstance(a, str):
                raise TypeError(f"address {a!r}: want text host:port")
            a = a.strip()
            if not a:
                raise ValueError(f"address list {addrs!r} has an empty address")
            split_addr(a)  # a bad one fails here, not at the first failover
            if a not in self.items:
                self.items.append(a)
        if not self.items:
            raise ValueError("no main control address")

    def __len__(self) -> int:
        return len(self.items)

    def __str__(self) -> str:
        return ",".join(self.items)

    @property
    def first(self) -> str:
        return self.items[0]

    def after(self, addr: str) -> str:
        """The address after ``addr``, wrapping round; the first for one not listed."""
        if addr not in self.items:
            return self.items[0]
        return self.items[(self.items.index(addr) + 1) % len(self.items)]

    def starting(self, first: str) -> list[str]:
        """Every address once, from ``first`` round (from the first when not listed)."""
        i = self.items.index(first) if first in self.items else 0
        return self.items[i:] + self.items[:i]

    def judge(self, hint: str | None) -> str:
        """Whether a leader hint may be followed: FOLLOW, OUTSIDE or NO_HINT."""
        if not hint:
            return NO_HINT
        return FOLLOW if hint in self.items else OUTSIDE

    def follow(self, source: str, hint: str | None) -> bool:
        """Whether to go to ``hint``; one outside the list is logged and refused."""
        verdict = self.judge(hint)
        if verdict == OUTSIDE:
            log.warning("ignoring the leader hint %s from %s: it is not among the configured addresses %s",
                        hint, source, self)
        return verdict == FOLLOW


class Follower(Exception):
    """A member answered, but does not serve: ``leader`` is its hint or None.
    ``session`` is whatever the dial made, for the caller to close."""

    def __init__(self, addr: str, leader: str | None, session: Any = None) -> None:
        super().__init__(f"{addr} is not the leader (leader {leader or 'unknown'})")
        self.addr, self.leader, self.session = addr, leader or None, session


Dial = Callable[[str], Awaitable[S]]


class Finder(Generic[S]):
    """Passes over the addresses with ``dial``, which returns a session from
    the leader, raises :class:`Follower` from a member that is not, or any
    other error for an address it could not use."""

    def __init__(self, addrs: AddrList, dial: Dial[S]) -> None:
        self.addrs, self.dial = addrs, dial

    async def one_pass(self, first: str) -> tuple[str, S]:
        """Dial each address at most once, from ``first``, a hint in the list
        next. Raises LeaderOutside when a follower named a leader outside the
        list, NoLeader when followers answered without a usable hint, else
        the error of the only address or a ConnectionLost naming each."""
        queue = self.addrs.starting(first)
        tried: set[str] = set()
        errs: list[tuple[str, BaseException]] = []
        outside: LeaderOutside | None = None
        followers = 0
        while queue:
            addr = queue.pop(0)
            if addr in tried:
                continue
            tried.add(addr)
            log.debug("dialling %s", addr)
            try:
                return addr, await self.dial(addr)
            except Follower as f:
                followers += 1
                if f.session is not None:
                    f.session.close()
                errs.append((addr, f))
                if self.addrs.follow(addr, f.leader):
                    if f.leader not in tried:
                        queue.insert(0, f.leader)  # type: ignore[arg-type]
                elif outside is None and self.addrs.judge(f.leader) == OUTSIDE:
                    outside = LeaderOutside(addr, f.leader or "", self.addrs.items)
            except (asyncio.CancelledError, KeyboardInterrupt):
                raise
            except Exception as e:
                errs.append((addr, e))
        if outside is not None:
            raise outside
        if followers:
            raise NoLeader("no leader among the main control addresses: " + _joined(errs))
        if len(errs) == 1:
            raise errs[0][1]
        raise ConnectionLost("cannot connect to any main control address: " + _joined(errs)) from errs[0][1]

    async def find(self, timeout: float, first: str | None = None) -> tuple[str, S]:
        """Passes until one gives a session. While the members reached have no
        leader in the list (an election is under way, or a hint outside the
        list is ignored, as during a change of members) it waits, with
        backoff, up to ``timeout`` seconds; then NoLeader, or LeaderOutside
        when the last pass met such a hint, says so. Other errors are raised."""
        start = time.monotonic()
        deadline = start + timeout
        backoff = Backoff(BACKOFF_MIN, BACKOFF_MAX)
        first = first or self.addrs.first
        while True:
            try:
                return await self.one_pass(first)
            except NoLeader as e:  # LeaderOutside too
                # Wait up to the deadline, not short of it: a leader elected
                # in the last stretch still counts. One last pass is made there.
                left = deadline - time.monotonic()
                if left <= 0:
                    if isinstance(e, LeaderOutside):
                        raise
                    waited = time.monotonic() - start
                    raise NoLeader(f"{e} (none elected in {waited:.1f}s; a majority of the voters "
                                   "must be up to elect a leader)") from None
                await asyncio.sleep(min(backoff.next(), left))
                first = self.addrs.after(first)


def _joined(errs: list[tuple[str, BaseException]]) -> str:
    return "; ".join(f"{a}: {e or type(e).__name__}" for a, e in errs)


class Link(Generic[S]):
    """How a client connects again after losing its connection: passes over
    the addresses with backoff (``min_delay`` doubling up to ``max_delay``,
    with jitter) until one gives the leader, or ``give_up_after`` seconds
    (None: never) without a connection end it."""

    def __init__(self, finder: Finder[S], min_delay: float = BACKOFF_MIN, max_delay: float = BACKOFF_MAX,
                 give_up_after: float | None = GIVE_UP_AFTER) -> None:
        if not 0 < min_delay <= max_delay:
            raise ValueError("want 0 < reconnect min_delay <= max_delay")
        if give_up_after is not None and give_up_after <= 0:
            raise ValueError("give_up_after: want a positive number of seconds, or None")
        self.finder, self.addrs = finder, finder.addrs
        self.min_delay, self.max_delay, self.give_up_after = min_delay, max_delay, give_up_after
        self._hopped = -math.inf

    async def reconnect(self, at: str, hint: str, cause: BaseException) -> tuple[str, S]:
        """A session with the leader: from ``hint`` (a leader in the list a
        not_leader named), else from the address after ``at``. A named
        leader is dialled at once, unless one was less than ``max_delay``
        ago: two stale followers could name each other."""
        first, hop = self.addrs.after(at), False
        if hint:
            first, now = hint, time.monotonic()
            if hop := now - self._hopped > self.max_delay:
                self._hopped = now
        backoff = Backoff(self.min_delay, self.max_delay)
        since, last = time.monotonic(), ""
        attempt = 0
        while True:
            attempt += 1
            delay = 0.0 if attempt == 1 and hop else backoff.next()
            left = None if self.give_up_after is None else since + self.give_up_after - time.monotonic()
            if left is not None and delay >= left:
                raise ConnectionLost(f"{cause} (no connection for {self.give_up_after}s: gave up reconnecting)")
            await asyncio.sleep(delay)
            try:
                async with asyncio.timeout(None if left is None else left - delay):
                    return await self.finder.one_pass(first)
            except (asyncio.CancelledError, KeyboardInterrupt):
                raise
            except Exception as e:
                if str(e) != last:  # each new reason once, not every attempt
                    log.warning("cannot reconnect yet (attempt %d): %s", attempt, e or type(e).__name__)
                    last = str(e)
                first = self.addrs.after(first)
