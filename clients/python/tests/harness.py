"""Runs the real apollo11 binary for the tests.

The binary is $APOLLO11_BIN when set (.ci/run builds it), else it is built
once per test run with `go build` from the repository root into a
temporary directory removed at exit. Every process a test starts is killed
by the test's cleanup.
"""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import unittest
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
_build_lock = threading.Lock()
_bin: str | None = None


def binary() -> str:
    global _bin
    with _build_lock:
        if _bin is None:
            env_bin = os.environ.get("APOLLO11_BIN")
            if env_bin:
                _bin = env_bin
            else:
                d = tempfile.mkdtemp(prefix="apollo11-pytest-")
                atexit.register(shutil.rmtree, d, True)
                out = os.path.join(d, "apollo11")
                subprocess.run(["go", "build", "-o", out, "./cmd/apollo11"], cwd=REPO, check=True)
                _bin = out
        return _bin


def free_addr() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


def wait_until(cond, timeout: float = 30.0, what: str = "condition") -> None:
    """Poll ``cond`` (the state lives in another process: there is no event
    to wait on) until it is true or ``timeout`` passes."""
    deadline = time.monotonic() + timeout
    while True:
        if cond():
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.05)


class Proc:
    """A child process of the binary, its output kept in a file."""

    def __init__(self, test: unittest.TestCase, args: list[str], workdir: str) -> None:
        self.log = open(os.path.join(workdir, f"proc-{time.monotonic_ns()}.log"), "w+b")
        # APOLLO11_BIN is the tests' setting: the binary would warn that no flag reads it.
        env = {k: v for k, v in os.environ.items() if k != "APOLLO11_BIN"}
        self.p = subprocess.Popen([binary(), *args], stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True,
                                  env=env)
        test.addCleanup(self.kill)
        test.addCleanup(self.log.close)

    def output(self) -> str:
        self.log.flush()
        with open(self.log.name, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def kill(self) -> None:
        if self.p.poll() is None:
            os.killpg(self.p.pid, signal.SIGKILL)
        self.p.wait()

    def terminate(self, timeout: float = 30.0) -> int:
        self.p.send_signal(signal.SIGTERM)
        return self.p.wait(timeout)


class MainControl(Proc):
    """`apollo11 maincontrol` on a free loopback port, with a temp data dir."""

    def __init__(self, test: unittest.TestCase, workdir: str, *extra: str, addr: str | None = None) -> None:
        self.addr = addr or free_addr()
        self.data = os.path.join(workdir, "data")
        super().__init__(test, ["maincontrol", "--listen", self.addr, "--data-dir", self.data, *extra], workdir)
        self.wait_welcome()

    def wait_welcome(self, timeout: float = 30.0) -> None:
        host, port = self.addr.rsplit(":", 1)

        def up() -> bool:
            if self.p.poll() is not None:
                raise AssertionError(f"main control exited:\n{self.output()}")
            try:
                with socket.create_connection((host, int(port)), timeout=1) as s:
                    s.settimeout(2)
                    return b"type=welcome" in s.recv(64)
            except OSError:
                return False

        wait_until(up, timeout, "the main control's welcome")


class BinaryTest(unittest.TestCase):
    """A test with a temporary directory and the binary at hand."""

    def setUp(self) -> None:
        self.bin = binary()
        self.dir = tempfile.mkdtemp(prefix="apollo11-py-")
        self.addCleanup(shutil.rmtree, self.dir, True)

    def main_control(self, *extra: str, addr: str | None = None) -> MainControl:
        return MainControl(self, self.dir, *extra, addr=addr)

    def run_cli(self, *args: str, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
        return subprocess.run([self.bin, *args], capture_output=True, text=True, timeout=timeout)


class Member(MainControl):
    """One `apollo11 maincontrol` of a cluster, in its own process (so that
    it can be killed alone). Its id is its client address."""

    def __init__(self, test: unittest.TestCase, workdir: str, addr: str, raft: str, members: str, *extra: str) -> None:
        self.raft = raft
        os.makedirs(workdir, exist_ok=True)
        super().__init__(test, workdir, "--raft-listen", raft, "--cluster-members", members, *extra, addr=addr)

    def role(self) -> tuple[str, str]:
        """This member's ``role`` and ``leader`` in ``hello_ok``; ("", "")
        when it cannot be asked (down, or not answering)."""
        from apollo11 import Connection  # the package under test, not needed to start the binary

        try:
            with Connection.connect(self.addr, timeout=2) as conn:
                ok = conn.hello(timeout=2)
        except Exception:  # a member starting or being killed fails in many ways
            return "", ""
        return ok.get("role") or "", ok.get("leader") or ""


def start_cluster(test: BinaryTest, n: int = 3, *extra: str) -> list[Member]:
    """n members on loopback, each its own process, bootstrapped together."""
    pairs = [(free_addr(), free_addr()) for _ in range(n)]
    members = ",".join(f"{a}={r}" for a, r in pairs)
    return [Member(test, os.path.join(test.dir, f"m{i}"), a, r, members, *extra) for i, (a, r) in enumerate(pairs)]


def wait_leader(members: list[Member], timeout: float = 60.0, but: Member | None = None) -> Member:
    """The member every live member names as leader (other than ``but``),
    once they agree."""
    found: list[Member] = []

    def agreed() -> bool:
        live = [m for m in members if m.p.poll() is None]
        roles = [m.role() for m in live]
        leaders = {leader for _, leader in roles}
        leads = [m for m, (role, _) in zip(live, roles) if role == "leader" and m is not but]
        if len(leads) == 1 and leaders == {leads[0].addr}:
            found[:] = leads
            return True
        return False

    wait_until(agreed, timeout, "the members to agree on a leader")
    return found[0]
