"""load_token against files that hold no token: bounded, never blocking."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import apollo11
from apollo11 import load_token
from apollo11.connection import MAX_TOKEN_FILE

WAIT = 60.0  # generous: the CI machine is shared and often busy
PKG_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(apollo11.__file__)))

# A child process with a memory cap: an unbounded read fails there
# with MemoryError (or the timeout), never fills this machine's memory.
CHILD = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
from apollo11 import load_token
try:
    load_token(sys.argv[1])
except ValueError as e:
    print(e)
    sys.exit(3)
"""


class TokenFile(unittest.TestCase):
    def setUp(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="apollo11-token-")
        self.addCleanup(shutil.rmtree, self.dir, True)

    def write(self, name: str, data: bytes) -> str:
        path = os.path.join(self.dir, name)
        with open(path, "wb") as f:
            f.write(data)
        return path

    def load_in_child(self, path: str) -> str:
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([PKG_ROOT, os.environ.get("PYTHONPATH", "")]))
        r = subprocess.run([sys.executable, "-c", CHILD, path], capture_output=True, text=True, timeout=WAIT, env=env)
        self.assertEqual(r.returncode, 3, f"want a ValueError, got exit {r.returncode}: {r.stderr[-2000:]}")
        return r.stdout

    def test_a_token_up_to_the_bound_is_read(self) -> None:
        self.assertEqual(load_token(self.write("t", b"a-long-enough-shared-secret\r\n")), b"a-long-enough-shared-secret")
        big = b"x" * (MAX_TOKEN_FILE - 1) + b"\n"
        self.assertEqual(load_token(self.write("big", big)), big[:-1])

    def test_a_larger_file_is_refused(self) -> None:
        path = self.write("huge", b"x" * (MAX_TOKEN_FILE + 1))
        with self.assertRaisesRegex(ValueError, f"larger than {MAX_TOKEN_FILE} bytes"):
            load_token(path)

    def test_an_empty_token_is_refused(self) -> None:
        with self.assertRaisesRegex(ValueError, "token is empty"):
            load_token(self.write("empty", b"\r\n\n"))

    def test_dev_zero_is_refused_without_reading_it(self) -> None:
        if not os.path.exists("/dev/zero"):
            self.skipTest("no /dev/zero")
        self.assertIn("is not a regular file", self.load_in_child("/dev/zero"))

    def test_a_fifo_is_refused_without_waiting_for_a_writer(self) -> None:
        if not hasattr(os, "mkfifo"):
            self.skipTest("no FIFOs here")
        path = os.path.join(self.dir, "fifo")
        os.mkfifo(path)
        self.assertIn("is not a regular file", self.load_in_child(path))

    def test_a_directory_is_refused(self) -> None:
        with self.assertRaisesRegex(ValueError, "is not a regular file"):
            load_token(self.dir)


if __name__ == "__main__":
    unittest.main()
