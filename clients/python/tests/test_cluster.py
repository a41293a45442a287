"""The client and executor against a real three-member cluster (protocol
section 8.13): each member is its own `apollo11 maincontrol` process, so
that the leader can be killed alone."""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import subprocess
import sys
import threading
import time
import unittest
from collections.abc import Callable

from harness import BinaryTest, MainControl, start_cluster, wait_leader, wait_until

from apollo11 import (
    AsyncClient,
    Client,
    Connection,
    ConnectionLost,
    Executor,
    LeaderOutside,
    Message,
    NoLeader,
    OutcomeUnknown,
    Task,
)
from apollo11.cluster import ClusterMember, parse_cluster_status
from apollo11.errors import ClientClosed, ReplyError
from apollo11.failover import GIVE_UP_AFTER, AddrList
from apollo11.rpc import resendable

WAIT = 60.0  # generous: the CI machine is shared and often busy


class Cluster(BinaryTest):
    def setUp(self) -> None:
        super().setUp()
        # A short executor timeout: after a failover, running tasks wait one
        # of it for their executor to list them.
        self.members = start_cluster(self, 3, "--heartbeat-timeout", "3s")
        self.leader = wait_leader(self.members, WAIT)
        self.followers = [m for m in self.members if m is not self.leader]

    def executor(self, addrs: list[str], ex_id: str, handlers: dict[str, Callable[[Task], object]]) -> Executor:
        ex = Executor(addrs, executor_id=ex_id, handlers=handlers, backoff_min=0.05, backoff_max=0.5)
        ex.start()
        self.addCleanup(ex.stop, False, WAIT)
        return ex

    def test_the_readme_example_runs(self) -> None:
        # The README's cluster example, with this cluster's addresses: it
        # prints the task's end and the leader, with no other setup.
        readme = os.path.join(os.path.dirname(__file__), "..", "README.md")
        with open(readme, encoding="utf-8") as f:
            text = f.read()
        code = text.split("## A cluster", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
        for i, m in enumerate(self.members):
            code = code.replace(f"10.0.0.{i + 1}:1969", m.addr)
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=WAIT)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(out.stdout, f"succeeded hello world via {self.leader.addr}\n", out.stderr)

    def test_a_follower_first_leads_to_the_leader(self) -> None:
        f1, f2 = self.followers
        addrs = [f1.addr, f2.addr, self.leader.addr]
        # The first follower's hint sends the client straight to the leader:
        # the second follower, next in the list, is never dialled.
        with self.assertLogs("apollo11", logging.DEBUG) as logs:
            c = Client(addrs, name="py-cluster")
        self.addCleanup(c.close)
        dialled = [r.getMessage() for r in logs.records if r.getMessage().startswith("dialling ")]
        self.assertEqual(dialled, [f"dialling {f1.addr}", f"dialling {self.leader.addr}"])
        self.assertEqual(c.address, self.leader.addr)

        ex = self.executor(addrs, "py-c1", {"echo": lambda task: dict(task.args)})
        self.assertTrue(ex.wait_registered(WAIT))
        done = c.submit_wait("echo", {"a": "1"}, wait_timeout=WAIT)
        self.assertEqual((done.state, done.out), ("succeeded", {"a": "1"}))

        st = c.cluster_status()
        self.assertEqual((st.id, st.role, st.leader), (self.leader.addr, "leader", self.leader.addr))
        self.assertEqual(sorted(m.id for m in st.members), sorted(addrs))
        # A graceful change of leader: the old one closes its connections,
        # and the client and the executor follow to the new one.
        try:
            c.cluster_transfer(f2.addr)
        except OutcomeUnknown:
            pass  # the reply was lost to the close: the status tells
        wait_until(lambda: c.cluster_status().leader == f2.addr, WAIT, "the leadership to move")
        self.assertEqual(c.address, f2.addr)
        done = c.submit_wait("echo", {"b": "2"}, wait_timeout=WAIT)
        self.assertEqual((done.state, done.out), ("succeeded", {"b": "2"}))
        self.assertEqual(c.query(done.task_id).executor_id, "py-c1")

    def test_a_hint_outside_the_list_is_not_followed(self) -> None:
        f1, f2 = self.followers
        # The followers name the leader, which is not in the list: the
        # client must not go there (a stale or rogue server could name any).
        with self.assertRaises(LeaderOutside) as cm:
            Client([f1.addr, f2.addr], timeout=5)
        self.assertEqual(cm.exception.leader, self.leader.addr)

        with self.assertLogs("apollo11", logging.WARNING) as logs:
            ex = self.executor([f1.addr, f2.addr], "py-c2", {"echo": lambda task: dict(task.args)})
            ignored = lambda: sum("ignoring the leader hint" in r.getMessage() for r in logs.records)  # noqa: E731
            wait_until(lambda: ignored() >= 3 or ex.registrations, WAIT, "the executor to ignore the hint three times")
        self.assertEqual(ex.registrations, 0)
        with Client(self.leader.addr) as c:
            self.assertEqual(c.stats().executors, 0)

    def test_kill_the_leader_mid_stream(self) -> None:
        addrs = [m.addr for m in self.members]
        release = threading.Event()

        def hold(task: Task) -> dict[str, str]:
            if not release.wait(WAIT):
                raise RuntimeError("never released")
            return {"held": "yes"}

        ex = self.executor(addrs, "py-c3", {"hold": hold})
        self.assertTrue(ex.wait_registered(WAIT))
        c = Client(addrs, reconnect_max=0.5)
        self.addCleanup(c.close)
        watch = c.submit_watch("hold", key="held", max_attempts=1)
        wait_until(lambda: c.query(watch.task_id).state == "running", WAIT, "the task to run")

        # A stream of keyed submits, from another thread, across the kill.
        stop, ids, errors = threading.Event(), [], []

        def stream() -> None:
            n = 0
            while not stop.is_set():
                try:
                    ids.append(c.submit("later", key=f"s{n}").task_id)
                    n += 1
                except Exception as e:  # any is a failure of the test
                    errors.append(e)
                    return

        t = threading.Thread(target=stream)
        t.start()
        self.addCleanup(t.join, WAIT)
        self.addCleanup(stop.set)
        wait_until(lambda: len(ids) >= 5 or errors, WAIT, "submits before the kill")
        old = self.leader
        old.kill()
        new = wait_leader(self.members, WAIT, but=old)
        wait_until(lambda: ex.registrations >= 2, WAIT, "the executor to register with the new leader")
        at_kill = len(ids)
        wait_until(lambda: len(ids) >= at_kill + 5 or errors, WAIT, "submits after the kill")
        stop.set()
        t.join(WAIT)
        self.assertEqual(errors, [])
        self.assertEqual(len(set(ids)), len(ids), "every keyed submit made its own task once")
        self.assertEqual(c.address, new.addr)

        release.set()
        done = watch.done(WAIT)  # the watch goes on by querying the new leader
        self.assertEqual((done.state, done.out), ("succeeded", {"held": "yes"}))
        self.assertEqual(c.query(watch.task_id).attempt, 1, "the same dispatch ran on: not retried")

        # Without a majority no member leads: a clear error within the timeout.
        new.kill()
        began = time.monotonic()
        with self.assertRaises(NoLeader) as cm:
            Client(addrs, timeout=2)
        self.assertGreaterEqual(time.monotonic() - began, 2, "it looked until the deadline, not short of it")
        self.assertNotIsInstance(cm.exception, LeaderOutside)
        self.assertRegex(str(cm.exception), r"none elected in 2\.\ds; a majority of the voters must be up")


class Addresses(unittest.TestCase):
    def test_lists(self) -> None:
        self.assertEqual(AddrList("a:1").items, ["a:1"])
        self.assertEqual(AddrList(" a:1, b:2 ,a:1").items, ["a:1", "b:2"])
        self.assertEqual(AddrList(["a:1", "[::1]:2"]).items, ["a:1", "[::1]:2"])
        lst = AddrList("a:1,b:2,c:3")
        self.assertEqual((lst.after("a:1"), lst.after("c:3"), lst.after("x:9")), ("b:2", "a:1", "a:1"))
        self.assertEqual(lst.starting("b:2"), ["b:2", "c:3", "a:1"])
        self.assertEqual([lst.judge(h) for h in ("c:3", "", None, "c:33", "evil:1")],
                         ["follow", "none", "none", "outside", "outside"])
        for bad in ("", " ", "a:1,", "a:1,,b:2", "a", "a:0", "a:x", []):
            with self.assertRaises(ValueError, msg=repr(bad)):
                AddrList(bad)


    def test_cluster_status_reply(self) -> None:
        m = Message("cluster_status_ok", {"id": "a:1", "role": "leader", "leader": "a:1", "term": 3,
                                          "commit_index": 9, "applied_index": 8, "count": 2,
                                          "member.0.id": "a:1", "member.0.raft": "a:2", "member.0.voter": True,
                                          "member.0.match_index": 9, "member.0.lag": 0,
                                          "member.1.id": "b:1", "member.1.raft": "b:2", "member.1.voter": False,
                                          "member.1.future": "ignored"})
        st = parse_cluster_status(m)
        self.assertEqual((st.leader, st.term, st.commit_index, st.applied_index), ("a:1", 3, 9, 8))
        self.assertEqual(st.members, [ClusterMember("a:1", "a:2", True, 9, 0), ClusterMember("b:1", "b:2", False)])
        m["count"] = 3  # more than the frame holds
        with self.assertRaises(ReplyError):
            parse_cluster_status(m)


class FakeLeader(BinaryTest):
    """Exchanges a real member cannot be made to show at will: a member
    refusing a request on an open connection with not_leader (as one may
    that just lost its leadership), and a leader dying with requests in
    flight."""

    def subdir(self, name: str) -> str:
        os.makedirs(d := os.path.join(self.dir, name))
        return d

    def fake_follower(self, hint: str) -> str:
        return self.fake(lambda conn, m: conn.send(Message("error", {
            "req": m.get("req") or "", "code": "not_leader", "leader": hint, "message": "lost the leadership"})))

    def fake(self, answer: Callable[[Connection, Message], None],
             role: Callable[[], dict[str, str]] = lambda: {"role": "leader"}) -> str:
        """A fake leader: it says role=leader in hello_ok (or what ``role``
        returns, at each hello), then calls ``answer`` with each request."""
        srv = socket.create_server(("127.0.0.1", 0))
        self.addCleanup(srv.close)
        conns: list[Connection] = []
        self.addCleanup(lambda: [c.close() for c in conns])

        def serve(conn: Connection) -> None:
            try:
                conn.send(Message("welcome", {"proto": 1, "nonce": "0" * 32, "auth": "none"}))
                hello = conn.recv(WAIT)
                conn.send(Message("hello_ok", {"req": hello.get("req") or "0", **role()}))
                while True:
                    answer(conn, conn.recv(WAIT))
            except Exception:  # the client went away, or the test ended
                conn.close()

        def accept() -> None:
            while True:
                try:
                    s, _ = srv.accept()
                except OSError:
                    return
                conns.append(Connection(s))
                threading.Thread(target=serve, args=(conns[-1],), daemon=True).start()

        threading.Thread(target=accept, daemon=True).start()
        return "127.0.0.1:%d" % srv.getsockname()[1]

    def test_not_leader_in_the_list_is_followed_and_the_request_sent_again(self) -> None:
        decoy, leader = (MainControl(self, self.subdir(name)) for name in ("decoy", "leader"))
        fake = self.fake_follower(leader.addr)
        with Client([fake, decoy.addr, leader.addr]) as c:
            self.assertEqual(c.address, fake)
            # Refused by the fake, it changed nothing: sent again, though a
            # submit without a key is not sent again after a plain loss.
            t = c.submit("x")
            self.assertEqual(c.address, leader.addr, "the hint, not the next address, was followed")
        with Client(leader.addr) as c:
            self.assertEqual(c.query(t.task_id).task_type, "x")

    def test_not_leader_outside_the_list_is_not_followed(self) -> None:
        rogue, good = (MainControl(self, self.subdir(name)) for name in ("rogue", "good"))
        fake = self.fake_follower(rogue.addr)
        with self.assertLogs("apollo11", logging.WARNING) as logs, Client([fake, good.addr]) as c:
            c.submit("x", key="where")
            self.assertEqual(c.address, good.addr)
        self.assertTrue(any("ignoring the leader hint " + rogue.addr in r.getMessage() for r in logs.records))
        with Client(rogue.addr) as r:
            self.assertEqual(r.stats().tasks["pending"], 0, "nothing reached the rogue")

    def test_requests_in_flight_at_a_drop(self) -> None:
        real = MainControl(self, self.subdir("real"))

        def drop(conn: Connection, m: Message) -> None:
            conn.close()  # dies before any reply

        fake = self.fake(drop)
        with Client([fake, real.addr]) as c:
            with self.assertRaises(OutcomeUnknown):
                c.submit("x")  # no key: it may or may not have been made
            self.assertEqual(c.stats().tasks["pending"], 0)  # a read waits for the next connection
            self.assertEqual(c.address, real.addr)
        with Client([fake, real.addr]) as c:
            t = c.submit("x", key="k")  # with a key it is sent again, to the next address
            self.assertEqual(c.address, real.addr)
            self.assertEqual(c.submit("x", key="k"), type(t)(t.task_id, True))
            self.assertEqual(c.query(t.task_id).task_type, "x")  # a read, sent again as well

    def test_give_up_after(self) -> None:
        mc = MainControl(self, self.subdir("mc"))
        c = Client(mc.addr, reconnect=True, give_up_after=1.0, reconnect_max=0.2)
        self.addCleanup(c.close)
        c.stats()
        mc.kill()
        with self.assertRaises(ConnectionLost) as cm:
            c.stats()  # waits for a reconnect that never comes, then gives up
        self.assertIn("gave up reconnecting", str(cm.exception))

    def test_replies_behind_a_not_leader_reach_their_requests(self) -> None:
        # A member answers each request by the role it has when it arrives:
        # it refused the first, then served the second (a follower that
        # became leader). The second's reply is not lost with the connection.
        real = MainControl(self, self.subdir("real"))
        held: list[Message] = []

        def answer(conn: Connection, m: Message) -> None:
            if not held:
                held.append(m)  # answered once the second arrives
                return
            conn.send(Message("error", {"req": held[0].get("req") or "", "code": "not_leader",
                                        "leader": real.addr, "message": "not yet the leader"}))
            conn.send(Message("submitted", {"req": m.get("req") or "", "task_id": 77}))

        fake = self.fake(answer)

        async def both() -> list[object]:
            async with await AsyncClient.connect([fake, real.addr]) as c:
                async with asyncio.timeout(WAIT):
                    got = await asyncio.gather(c.submit("first"), c.submit("second"), return_exceptions=True)
                self.assertEqual(c.address, real.addr)
                return got

        first, second = asyncio.run(both())
        self.assertEqual(second, type(second)(77, False), "served by the fake: its reply is kept")
        self.assertNotIsInstance(first, BaseException, "refused by the fake: sent again to the leader")
        with Client(real.addr) as c:
            self.assertEqual(c.query(first.task_id).task_type, "first")  # type: ignore[union-attr]
            self.assertEqual(c.stats().tasks["pending"], 1, "only the refused one went to the leader")

    def test_a_hint_outside_the_list_is_waited_out_at_connect(self) -> None:
        # During a change of members a follower may name a leader not in the
        # list: the client keeps trying up to its timeout, not failing at once.
        hellos: list[int] = []

        def role() -> dict[str, str]:
            hellos.append(1)
            return {"role": "leader"} if len(hellos) > 2 else {"role": "follower", "leader": "127.0.0.1:1"}

        fake = self.fake(lambda conn, m: None, role)
        with Client([fake], timeout=WAIT) as c:
            self.assertEqual(c.address, fake)
        self.assertEqual(len(hellos), 3)

        # Named for ever: LeaderOutside at the end, after more than one pass.
        hellos.clear()

        def outside() -> dict[str, str]:
            hellos.append(1)
            return {"role": "follower", "leader": "127.0.0.1:1"}

        always = self.fake(lambda conn, m: None, outside)
        with self.assertRaises(LeaderOutside) as cm:
            Client([always], timeout=2)
        self.assertEqual(cm.exception.leader, "127.0.0.1:1")
        self.assertGreater(len(hellos), 1, "it tried again before giving up")

    def test_requests_waiting_for_a_connection_are_bounded(self) -> None:
        mc = MainControl(self, self.subdir("mc"))
        dead = socket.create_server(("127.0.0.1", 0))
        gone = "127.0.0.1:%d" % dead.getsockname()[1]
        dead.close()

        async def run() -> None:
            c = await AsyncClient.connect([mc.addr, gone], max_waiting=2)
            try:
                link = c._link  # type: ignore[attr-defined]
                self.assertEqual((link.give_up_after, GIVE_UP_AFTER), (60.0, 60.0), "a list gives up by default")
                mc.kill()
                async with asyncio.timeout(WAIT):
                    while c.address is not None:
                        await asyncio.sleep(0.01)
                    waiting = [asyncio.create_task(c.stats()) for _ in range(2)]
                    await asyncio.sleep(0)  # both started: they wait for a connection
                    with self.assertRaises(ConnectionLost) as cm:
                        await c.stats()
                    self.assertIn("max_waiting", str(cm.exception))
                    self.assertFalse(any(t.done() for t in waiting), "the first two still wait")
            finally:
                await c.close()
            for t in waiting:
                with self.assertRaises(ClientClosed):
                    await t

        asyncio.run(run())

    def test_cluster_changes_are_not_sent_again(self) -> None:
        self.assertTrue(resendable(Message("pause", {"task_type": "x"})))
        self.assertTrue(resendable(Message("resume", {"task_type": "x"})))
        self.assertFalse(resendable(Message("cluster_add", {"id": "a:1", "raft": "a:2"})))
        self.assertFalse(resendable(Message("cluster_remove", {"id": "a:1"})))

        real = MainControl(self, self.subdir("real"))
        fake = self.fake(lambda conn, m: conn.close())  # dies before any reply
        with Client([fake, real.addr]) as c:
            with self.assertRaises(OutcomeUnknown) as cm:
                c.cluster_add("d:1", "d:2")  # sent again, a non-member would say unknown_type
            self.assertIn("apollo11 cluster status", str(cm.exception))
        with Client([fake, real.addr]) as c:
            with self.assertRaises(OutcomeUnknown) as cm:
                c.cluster_remove("d:1")
            self.assertIn("apollo11 cluster status", str(cm.exception))
        with Client([fake, real.addr]) as c:
            self.assertTrue(c.pause("x"), "sent again to the real one, which pauses")
            self.assertEqual(c.address, real.addr)
