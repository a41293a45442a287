"""The client and executor against the real binary, and across languages."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import struct
import threading
import unittest

from harness import BinaryTest, wait_until

from apollo11 import (
    AsyncClient,
    AsyncExecutor,
    AuthRequired,
    Client,
    Connection,
    ConnectionLost,
    Executor,
    Failure,
    Message,
    Result,
    ServerError,
    Task,
)
from apollo11.codec import encode_frame
from apollo11.connection import register_message
from apollo11.errors import EncodeError, FrameTooLargeError, MalformedError

WAIT = 60.0  # generous: the CI machine is shared and often busy


def start_executor(test: unittest.TestCase, ex: Executor) -> None:
    ex.start()
    test.addCleanup(ex.stop, False, WAIT)
    test.assertTrue(ex.wait_registered(WAIT), "executor did not register")


class PythonOnly(BinaryTest):
    def test_submit_and_run_in_python(self) -> None:
        mc = self.main_control()
        seen: dict[str, object] = {}
        ex = Executor(mc.addr, executor_id="py-1", slots=2)

        @ex.handler("py.echo")
        def echo(task):  # a plain function: runs on a thread
            seen.update(timeout=task.timeout, attempt=task.attempt, max_attempts=task.max_attempts,
                        trace_id=task.trace_id, args=task.args)
            task.progress(50, "half way")
            return Result(out={"msg": task.args["msg"]}, set={"last": task.args["msg"]}, add={"runs": 1})

        @ex.handler("py.fail")
        def fail(task):
            raise Failure("no good", retryable=False, out={"why": "asked"})

        start_executor(self, ex)
        with Client(mc.addr, name="py-test") as c:
            msg = "a=b\nc\\d é"
            done = c.submit_wait("py.echo", {"msg": msg}, priority=7, max_attempts=2, timeout=30,
                                 trace_id="trace-1", wait_timeout=WAIT)
            self.assertEqual((done.state, done.out), ("succeeded", {"msg": msg}))
            self.assertEqual(seen, {"timeout": 30.0, "attempt": 1, "max_attempts": 2, "trace_id": "trace-1",
                                    "args": {"msg": msg}})
            st = c.query(done.task_id)
            self.assertEqual((st.state, st.max_attempts, st.trace_id, st.executor_id), ("succeeded", 2, "trace-1", "py-1"))
            state = c.state_get("last", "runs", "unset")
            self.assertEqual(state.values, {"last": msg, "runs": "1"})

            failed = c.submit_wait("py.fail", wait_timeout=WAIT)
            self.assertEqual((failed.state, failed.error, failed.out), ("failed", "no good", {"why": "asked"}))

            # key: the same key returns the same task.
            a = c.submit("py.echo", {"msg": "k"}, key="once")
            b = c.submit("py.echo", {"msg": "k"}, key="once")
            self.assertEqual((b.task_id, b.duplicate), (a.task_id, True))
            # delay and depends_on: a delayed task holds its dependant in waiting.
            later = c.submit("py.echo", {"msg": "later"}, delay=3600)
            dep = c.submit("py.echo", {"msg": "dep"}, depends_on=[later.task_id])
            self.assertEqual(c.query(later.task_id).state, "pending")
            self.assertEqual(c.query(dep.task_id).state, "waiting")
            c.cancel(later.task_id)
            wait_until(lambda: c.query(dep.task_id).state == "cancelled", WAIT, "the dependant's cancel")
            self.assertIn(f"dependency {later.task_id} cancelled", c.query(dep.task_id).error)
            with self.assertRaises(ServerError) as cm:
                c.cancel(later.task_id)
            self.assertEqual(cm.exception.code, "illegal_transition")
            with self.assertRaises(ServerError) as cm:
                c.query(10**6)
            self.assertEqual(cm.exception.code, "unknown_task")

            stats = c.stats()
            self.assertEqual(set(stats.tasks), {"waiting", "pending", "dispatched", "running", "retrying",
                                                "succeeded", "failed", "cancelled"})
            self.assertEqual(stats.executors, 1)

    def test_async_pipelining_paging_and_cancel(self) -> None:
        mc = self.main_control()
        asyncio.run(self._async_body(mc.addr))

    async def _async_body(self, addr: str) -> None:
        ex = AsyncExecutor(addr, executor_id="py-async", slots=4)
        started = asyncio.Event()
        cancelled = asyncio.Event()

        @ex.handler("double")
        async def double(task):
            return {"n": str(2 * int(task.args["n"]))}

        @ex.handler("block")
        async def block(task):
            started.set()
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                cancelled.set()
                raise

        runner = asyncio.create_task(ex.run())
        try:
            async with asyncio.timeout(WAIT):
                await ex.wait_registered()
            async with await AsyncClient.connect(addr) as c:
                # Fifty requests in flight on one connection, matched by req.
                watches = await asyncio.gather(*(c.submit_watch("double", {"n": str(i)}) for i in range(50)))
                dones = await asyncio.wait_for(asyncio.gather(*(w.done() for w in watches)), WAIT)
                self.assertEqual([d.out["n"] for d in dones], [str(2 * i) for i in range(50)])
                self.assertEqual([d.task_id for d in dones], [w.task_id for w in watches])

                ids = []
                page = await c.list("succeeded", limit=7)
                while True:
                    ids.extend(page.ids)
                    self.assertLessEqual(len(page.ids), 7)
                    if page.next is None:
                        break
                    self.assertEqual(page.next, page.ids[-1])
                    page = await c.list("succeeded", limit=7, after=page.next)
                self.assertEqual(ids, sorted(w.task_id for w in watches))
                self.assertEqual(await c.list_all("succeeded"), ids)

                w = await c.submit_watch("block")
                async with asyncio.timeout(WAIT):
                    await started.wait()
                await c.cancel(w.task_id)
                async with asyncio.timeout(WAIT):
                    await cancelled.wait()
                    self.assertEqual((await w.done()).state, "cancelled")
                with self.assertRaises(ServerError) as cm:
                    await c.request("list", {"state": "nonsense"})
                self.assertEqual(cm.exception.code, "bad_request")
        finally:
            ex.stop()
            await asyncio.wait_for(runner, WAIT)

    def test_bye_on_stop_gives_back_the_running_task(self) -> None:
        # The heartbeat timeout is long: only a bye can end the task quickly.
        mc = self.main_control("--heartbeat-timeout", "120s")
        ex = Executor(mc.addr, executor_id="py-bye", drain_timeout=0.1)

        @ex.handler("hold")
        def hold(task: Task) -> None:
            task.cancelled.wait(WAIT)  # set by the stop
        ex.start()
        self.addCleanup(ex.stop, False, WAIT)
        self.assertTrue(ex.wait_registered(WAIT))
        with Client(mc.addr) as c:
            t = c.submit("hold", max_attempts=1)
            wait_until(lambda: c.query(t.task_id).state == "running", WAIT, "the task to run")
            ex.stop(drain=True, timeout=WAIT)
            # bye: the running task uses its only attempt and fails at once.
            wait_until(lambda: c.query(t.task_id).state == "failed", 20, "bye to end the task")

    def test_executor_reconnects_after_restart(self) -> None:
        mc = self.main_control("--heartbeat-timeout", "3s")
        ex = Executor(mc.addr, executor_id="py-back", backoff_min=0.05, backoff_max=1.0)
        ex.add_handler("echo", lambda task: dict(task.args))
        start_executor(self, ex)
        with Client(mc.addr) as c:
            self.assertTrue(c.submit_wait("echo", {"a": "1"}, wait_timeout=WAIT).succeeded)
        mc.terminate()
        mc2 = self.main_control("--heartbeat-timeout", "3s", addr=mc.addr)
        wait_until(lambda: ex.registrations >= 2, WAIT, "the executor to register again")
        with Client(mc2.addr) as c:
            done = c.submit_wait("echo", {"b": "2"}, wait_timeout=WAIT)
            self.assertEqual((done.task_id, done.out), (2, {"b": "2"}))  # the data dir came back


class ExecutorProtocol(BinaryTest):
    def test_priority_orders_dispatch(self) -> None:
        mc = self.main_control()
        order: list[str] = []
        with Client(mc.addr) as c:
            low = c.submit("rec", {"name": "low"})
            high = c.submit("rec", {"name": "high"}, priority=9)
            ex = Executor(mc.addr, executor_id="py-prio", slots=1)
            ex.add_handler("rec", lambda task: order.append(task.args["name"]))
            start_executor(self, ex)
            for t in (low, high):
                wait_until(lambda: c.query(t.task_id).state == "succeeded", WAIT, "both tasks to run")
        self.assertEqual(order, ["high", "low"])

    def test_heartbeats_keep_a_long_task_and_handlers_read_state(self) -> None:
        # Heartbeats every second: a task missing from two running= lists
        # would be taken back, and one attempt would then fail it.
        mc = self.main_control("--heartbeat-timeout", "3s")
        ex = Executor(mc.addr, executor_id="py-hb", slots=2)

        @ex.handler("setter")
        def setter(task):
            return Result(set={"colour": task.args["c"]}, add={"n": 5})

        @ex.handler("long")
        def long(task):
            task.cancelled.wait(5.0)  # several heartbeats
            if task.cancelled.is_set():
                raise Failure("cancelled: " + task.cancel_reason)
            st = task.state_get("colour", "n")
            return {"colour": st.values["colour"], "n": st.values["n"], "version": str(st.version)}

        start_executor(self, ex)
        with Client(mc.addr) as c:
            self.assertTrue(c.submit_wait("setter", {"c": "blue"}, wait_timeout=WAIT).succeeded)
            done = c.submit_wait("long", max_attempts=1, wait_timeout=WAIT)
            self.assertEqual((done.state, done.out), ("succeeded", {"colour": "blue", "n": "5", "version": "1"}))
            self.assertEqual(c.query(done.task_id).attempt, 1)

    def test_running_task_survives_a_restart(self) -> None:
        # After a restart a restored dispatch waits one heartbeat timeout to
        # be listed in running=; unlisted, its only attempt fails then.
        mc = self.main_control("--heartbeat-timeout", "5s")
        release = threading.Event()
        ex = Executor(mc.addr, executor_id="py-keep", backoff_min=0.05, backoff_max=1.0)

        @ex.handler("hold")
        def hold(task: Task) -> dict[str, str]:
            if not release.wait(WAIT):
                raise Failure("never released")
            return {"held": "yes"}

        start_executor(self, ex)
        # A witness: a raw executor that starts a task and never comes back.
        # Its task's restored timer is due with the held one's, so its end
        # shows that the main control has judged the held task too.
        gone = Connection.connect(mc.addr)
        self.addCleanup(gone.close)
        gone.send(register_message(gone.welcome, "py-gone", ["gone"], 1, None))
        self.assertEqual(gone.recv(WAIT).type, "registered")
        with Client(mc.addr) as c:
            t = c.submit("hold", max_attempts=1)
            w = c.submit("gone", max_attempts=1)
            task = gone.recv(WAIT)
            self.assertEqual((task.type, task["task_id"]), ("task", str(w.task_id)))
            gone.send(Message("started", {"task_id": task["task_id"], "version": task["version"]}))
            for i in (t, w):
                wait_until(lambda: c.query(i.task_id).state == "running", WAIT, "both tasks to run")
        mc.terminate()
        gone.close()
        mc2 = self.main_control("--heartbeat-timeout", "5s", addr=mc.addr)
        wait_until(lambda: ex.registrations >= 2, WAIT, "the executor to register again")
        with Client(mc2.addr) as c:
            wait_until(lambda: c.query(w.task_id).state != "running", WAIT, "the witness's restored timer")
            self.assertEqual(c.query(w.task_id).state, "failed")
            self.assertEqual(c.query(t.task_id).state, "running")
            release.set()
            wait_until(lambda: c.query(t.task_id).state == "succeeded", WAIT, "the result")
            st = c.query(t.task_id)
            self.assertEqual((st.attempt, st.out), (1, {"held": "yes"}))


class CrossLanguage(BinaryTest):
    def test_go_executor_runs_a_python_submit(self) -> None:
        mc = self.main_control()
        from harness import Proc

        go = Proc(self, ["executor", "--connect", mc.addr, "--types", "echo", "--id", "go-exec"], self.dir)
        with Client(mc.addr) as c:
            done = c.submit_wait("echo", {"msg": "from python\nwith = and \\"}, wait_timeout=WAIT)
            self.assertEqual((done.state, done.out), ("succeeded", {"msg": "from python\nwith = and \\"}))
            self.assertEqual(c.query(done.task_id).executor_id, "go-exec")
        go.terminate()

    def test_python_executor_runs_a_go_submit(self) -> None:
        mc = self.main_control()
        ex = Executor(mc.addr, executor_id="py-x")
        ex.add_handler("py.upper", lambda task: {"msg": task.args["msg"].upper()})
        start_executor(self, ex)
        r = self.run_cli("submit", "--addr", mc.addr, "--type", "py.upper", "--arg", "msg=hi there", "--wait", "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        out = json.loads(r.stdout)
        self.assertEqual((out["state"], out["out"]), ("succeeded", {"msg": "HI THERE"}))


class Auth(BinaryTest):
    def test_token(self) -> None:
        token_file = os.path.join(self.dir, "token")
        with open(token_file, "w") as f:
            f.write("a-long-enough-shared-secret\n")
        os.chmod(token_file, 0o600)
        mc = self.main_control("--token-file", token_file)
        with self.assertRaises(AuthRequired):
            Client(mc.addr)
        with self.assertRaises(ServerError) as cm:
            Client(mc.addr, token="wrong")
        self.assertEqual(cm.exception.code, "auth_failed")
        ex = Executor(mc.addr, executor_id="py-auth", token_file=token_file)
        ex.add_handler("echo", lambda task: dict(task.args))
        start_executor(self, ex)
        with Client(mc.addr, token=b"a-long-enough-shared-secret") as c:
            self.assertEqual(c.submit_wait("echo", {"k": "v"}, wait_timeout=WAIT).out, {"k": "v"})
        r = self.run_cli("submit", "--addr", mc.addr, "--token-file", token_file, "--type", "echo", "--wait")
        self.assertEqual(r.returncode, 0, r.stderr)


class RawFrames(BinaryTest):
    def test_server_refuses_malformed_and_too_large(self) -> None:
        mc = self.main_control("--max-frame", "4096")
        with Connection.connect(mc.addr) as conn:
            self.assertEqual(conn.welcome.max_frame, 4096)
            conn.hello()
            conn.send(Message("stats", {"req": "s"}))
            self.assertEqual(conn.recv(WAIT).type, "stats")
            bad = b"type=stats\n\nreq=x"  # an empty line
            conn.send_raw(struct.pack(">I", len(bad)) + bad)
            err = conn.recv(WAIT)
            self.assertEqual((err.type, err["code"]), ("error", "malformed"))
            with self.assertRaises(ConnectionLost):
                conn.recv(WAIT)
        with Connection.connect(mc.addr) as conn:
            conn.hello()
            conn.send_raw(struct.pack(">I", 4097))  # announced only: never sent
            err = conn.recv(WAIT)
            self.assertEqual((err.type, err["code"]), ("error", "frame_too_large"))

    def test_client_limits_and_backpressure(self) -> None:
        mc = self.main_control("--max-frame", "4096", "--max-pending", "3")
        with Client(mc.addr) as c:
            self.assertEqual(c.max_frame, 4096)
            with self.assertRaises(FrameTooLargeError):  # refused before sending
                c.submit("x", {"big": "x" * 5000})
            with self.assertRaises(EncodeError):
                c.submit("x", {"Bad Key": "v"})
            # Many threads share one connection; their requests pipeline.
            results: list[int] = []
            threads = [threading.Thread(target=lambda: results.append(c.submit("x").task_id)) for _ in range(3)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(WAIT)
            self.assertEqual(sorted(results), [1, 2, 3])
            with self.assertRaises(ServerError) as cm:
                c.submit("x")
            self.assertTrue(cm.exception.queue_full)
            self.assertEqual(c.stats().tasks["pending"], 3)  # the connection stays open

    def test_client_refuses_a_frame_too_large(self) -> None:
        self._refused_by_client(struct.pack(">I", (1 << 20) + 1), "frame_too_large", FrameTooLargeError)

    def test_client_refuses_a_malformed_frame(self) -> None:
        bad = b"type=a="  # a raw '=' in a value
        self._refused_by_client(struct.pack(">I", len(bad)) + bad, "malformed", MalformedError)

    def _refused_by_client(self, frame: bytes, code: str, exc: type) -> None:
        srv = socket.create_server(("127.0.0.1", 0))
        self.addCleanup(srv.close)
        got: list[bytes] = []

        def peer() -> None:
            s, _ = srv.accept()
            with s:
                s.sendall(encode_frame(Message("welcome", {"proto": 1, "nonce": "0" * 32, "auth": "none"})))
                s.recv(4096)  # hello
                s.sendall(encode_frame(Message("hello_ok", {"req": "0"})))
                s.sendall(frame)
                s.settimeout(WAIT)
                while data := s.recv(4096):
                    got.append(data)

        t = threading.Thread(target=peer, daemon=True)
        t.start()
        c = Client("127.0.0.1:%d" % srv.getsockname()[1])
        self.addCleanup(c.close)
        with self.assertRaises(ConnectionLost) as cm:
            c.stats()
        self.assertIsInstance(cm.exception.__cause__, exc)
        t.join(WAIT)
        self.assertIn(b"code=" + code.encode(), b"".join(got))


if __name__ == "__main__":
    unittest.main()
