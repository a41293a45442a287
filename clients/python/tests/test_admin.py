"""The v1.1 admin token and features (protocol sections 8.1 and 8.2),
against the real binary."""

from __future__ import annotations

import asyncio
import os
import time
import unittest

from apollo11 import AsyncClient, Client, Conflict, Executor, Message, ServerError
from apollo11.connection import Welcome, hello_message, sign

from harness import BinaryTest


class AdminTokenTest(BinaryTest):
    def token_file(self, name: str, value: str) -> str:
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write(value + "\n")
        os.chmod(path, 0o600)
        return path

    def test_admin_token_is_proven_in_hello(self) -> None:
        admin = self.token_file("admin", "admin-secret-0123456789")
        mc = self.main_control("--admin-token-file", admin)
        with Client(mc.addr, admin_token_file=admin) as c:
            self.assertTrue(c.admin)
            self.assertIn("admin", c.features)
        with Client(mc.addr) as c:
            self.assertFalse(c.admin, "no proof: an ordinary client")
        with self.assertRaises(ServerError) as cm:
            Client(mc.addr, admin_token="wrong-admin-token")
        self.assertEqual("auth_failed", cm.exception.code)

        async def go() -> None:
            c = await AsyncClient.connect(mc.addr, admin_token=b"admin-secret-0123456789")
            async with c:
                self.assertTrue(c.admin)
        asyncio.run(go())

    def test_without_an_admin_token_every_client_may(self) -> None:
        mc = self.main_control()
        with Client(mc.addr) as c:
            self.assertTrue(c.admin)


class WelcomeFeaturesTest(unittest.TestCase):
    def test_features_are_parsed_and_unknown_ones_kept(self) -> None:
        base = {"proto": "1", "server": "apollo11/x", "nonce": "0" * 32, "auth": "none", "max_frame": "1024"}
        w = Welcome.parse(Message("welcome", {**base, "features": "admin,types,later"}))
        self.assertEqual(("admin", "types", "later"), w.features)
        self.assertEqual((), Welcome.parse(Message("welcome", {**base, "features": ""})).features)
        self.assertEqual((), Welcome.parse(Message("welcome", base)).features, "a v1 main control")

    def test_hello_carries_the_admin_proof(self) -> None:
        base = {"proto": "1", "server": "apollo11/x", "nonce": "ab" * 16, "auth": "none", "max_frame": "1024"}
        w = Welcome.parse(Message("welcome", base))
        m = hello_message(w, None, admin_token=b"adm")
        self.assertEqual(sign(b"adm", "ab" * 16), m.get("admin_auth"))
        self.assertIsNone(hello_message(w, None).get("admin_auth"))


WAIT = 60.0


def admin_token_file(test: BinaryTest) -> str:
    path = os.path.join(test.dir, "admin")
    with open(path, "w") as f:
        f.write("admin-secret-0123456789\n")
    os.chmod(path, 0o600)
    return path


class RequeueTest(BinaryTest):
    """Requeue and the requests by filter (sections 8.3, 8.4)."""

    def test_requeue_and_requests_by_filter(self) -> None:
        mc = self.main_control()
        with Client(mc.addr) as c:
            ids = [c.submit("nobody.runs").task_id for _ in range(3)]
            dry = c.cancel_where(task_type="nobody.runs", dry_run=True)
            self.assertEqual((3, True), (dry.count, dry.dry_run))
            self.assertEqual("pending", c.query(ids[0]).state, "a dry run changes nothing")
            self.assertEqual(3, c.cancel_where(task_type="nobody.runs").count)
            self.assertEqual("cancelled", c.query(ids[0]).state)

            r = c.requeue(ids[0], reason="try again")
            self.assertEqual((ids[0], "pending"), (r.task_id, r.state))
            self.assertEqual("try again", c.request("query", {"task_id": ids[0]}).get("requeue_reason"))
            with self.assertRaises(ServerError) as cm:
                c.requeue(ids[0])
            self.assertEqual("illegal_transition", cm.exception.code, "a pending task is not requeued")

            self.assertEqual(2, c.requeue_where(task_type="nobody.runs", state="cancelled", limit=2).count)
            self.assertEqual(3, c.cancel_where(task_type="nobody.runs").count)
            soon = int(time.time() * 1000) + 60_000
            self.assertEqual(0, c.purge_where(state="cancelled", ended_after=soon, dry_run=True).count)
            self.assertEqual(3, c.purge_where(state="cancelled", ended_before=soon, dry_run=True).count)
            self.assertEqual(3, c.purge_where(state=["cancelled"]).count)
            with self.assertRaises(ServerError) as cm:
                c.query(ids[1])
            self.assertEqual("unknown_task", cm.exception.code, "purged")
            with self.assertRaises(ServerError) as cm:
                c.purge_where()
            self.assertEqual("bad_request", cm.exception.code, "an empty filter")

    def test_they_need_the_admin_token(self) -> None:
        admin = admin_token_file(self)
        mc = self.main_control("--admin-token-file", admin)
        with Client(mc.addr) as c:
            task = c.submit("x").task_id
            for call in (lambda: c.requeue(task), lambda: c.cancel_where(task_type="x"),
                         lambda: c.requeue_where(task_type="x"), lambda: c.purge_where(task_type="x")):
                with self.assertRaises(ServerError) as cm:
                    call()
                self.assertEqual("not_permitted", cm.exception.code)
        with Client(mc.addr, admin_token_file=admin) as c:
            self.assertEqual(1, c.cancel_where(task_type="x").count)


class PauseStateTypesTest(BinaryTest):
    """Pause and resume, shared-state repair, type_list (8.5 to 8.7)."""

    def test_they_need_the_admin_token(self) -> None:
        admin = admin_token_file(self)
        mc = self.main_control("--admin-token-file", admin)
        with Client(mc.addr) as c:
            for call in (lambda: c.pause("x"), lambda: c.resume("x"), lambda: c.state_set("k", "v"),
                         lambda: c.state_del("k")):
                with self.assertRaises(ServerError) as cm:
                    call()
                self.assertEqual("not_permitted", cm.exception.code)
            self.assertEqual([], c.type_list().types, "type_list is not an admin request")
        with Client(mc.addr, admin_token_file=admin) as c:
            self.assertTrue(c.pause("x"))

    def test_shared_state_repair_with_compare_and_set(self) -> None:
        mc = self.main_control()
        with Client(mc.addr) as c:
            v0 = c.state_get().version
            ch = c.state_set("limit", "10")
            self.assertEqual(("limit", v0 + 1, True), (ch.key, ch.state_version, ch.changed))
            self.assertEqual("10", c.state_get("limit").values["limit"])
            with self.assertRaises(Conflict) as cm:
                c.state_set("limit", "20", state_version=v0)
            self.assertEqual(v0 + 1, cm.exception.state_version)
            self.assertEqual("conflict", cm.exception.code)
            self.assertTrue(c.state_set("limit", "20", state_version=v0 + 1).changed)
            self.assertTrue(c.state_del("limit").changed)
            self.assertFalse(c.state_del("limit").changed, "not set any more")

    def test_pause_resume_and_type_list(self) -> None:
        mc = self.main_control()
        ex = Executor(mc.addr, executor_id="py-admin", slots=3)

        @ex.handler("py.admin")
        def run(task):
            return {"ok": "yes"}

        ex.start()
        self.addCleanup(ex.stop, False, WAIT)
        self.assertTrue(ex.wait_registered(WAIT))

        async def go() -> None:
            c = await AsyncClient.connect(mc.addr)
            async with c:
                self.assertIn("types", c.features)
                self.assertTrue(await c.pause("py.admin"))
                self.assertFalse(await c.pause("py.admin"), "already paused")
                watch = await c.submit_watch("py.admin")
                types = {t.name: t for t in await c.type_list_all()}
                self.assertTrue(types["py.admin"].paused)
                self.assertEqual((1, 3), (types["py.admin"].executors, types["py.admin"].slots))
                self.assertEqual("pending", (await c.query(watch.task_id)).state)
                self.assertTrue(await c.resume("py.admin"))
                done = await asyncio.wait_for(watch.done(), WAIT)
                self.assertEqual(("succeeded", {"ok": "yes"}), (done.state, done.out))
                page = await c.type_list(limit=1)
                self.assertEqual(1, len(page.types))
        asyncio.run(go())

if __name__ == "__main__":
    unittest.main()
