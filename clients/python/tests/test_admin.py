"""The v1.1 admin token and features (protocol sections 8.1 and 8.2),
against the real binary."""

from __future__ import annotations

import asyncio
import os
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
            self.assertIsInstance(c.features, tuple)
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


if __name__ == "__main__":
    unittest.main()
