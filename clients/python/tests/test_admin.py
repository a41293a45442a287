"""The v1.1 admin token and features (protocol sections 8.1 and 8.2),
against the real binary."""

from __future__ import annotations

import asyncio
import os
import time
import unittest

from apollo11 import AsyncClient, Client, Message, ServerError
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

if __name__ == "__main__":
    unittest.main()
