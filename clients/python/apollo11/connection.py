"""Connections to a main control: the handshake and framed I/O.

:class:`Connection` (blocking sockets) and :class:`AsyncConnection`
(asyncio streams) send and receive whole messages and nothing more, so
that harness writers can script any exchange, invalid frames included
(``send_raw``). The client and the executor are built on
:class:`AsyncConnection`.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import os
import socket
import stat
from dataclasses import dataclass
from pathlib import Path

from .codec import (
    DEFAULT_MAX_FRAME,
    HEADER_LEN,
    FrameReader,
    Message,
    decode_payload,
    encode_frame,
    foreign_banner,
    parse_header,
    parse_uint,
    refusal,
)
from .errors import AuthRequired, ConnectionLost, ProtocolError, ServerError

DEFAULT_ADDR = "127.0.0.1:1969"
MAX_FRAME_LIMIT = (1 << 31) - 1


MAX_TOKEN_FILE = 4096  # a token is one short line: 4 KiB leaves room for any


def load_token(path: str | Path) -> bytes:
    """Read a token file: its bytes without trailing CR and LF. An empty
    token, a file that is not a regular file, and one larger than
    ``MAX_TOKEN_FILE`` bytes raise ValueError; an unreadable file OSError."""
    # Non-blocking, so that a FIFO named by mistake is refused, not waited on.
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError(f"token file {path} is not a regular file: give a file holding the token")
        # One byte past the bound tells a file at the bound from a larger one.
        data = b""
        while len(data) <= MAX_TOKEN_FILE and (chunk := os.read(fd, MAX_TOKEN_FILE + 1 - len(data))):
            data += chunk
    finally:
        os.close(fd)
    if len(data) > MAX_TOKEN_FILE:
        raise ValueError(f"token file {path} is larger than {MAX_TOKEN_FILE} bytes: a token is one short line")
    token = data.rstrip(b"\r\n")
    if not token:
        raise ValueError(f"token file {path}: token is empty")
    return token


def sign(token: bytes, nonce: str) -> str:
    """HMAC-SHA256(token, nonce) as 64 lower-case hex characters (section 3)."""
    return hmac.new(token, nonce.encode("ascii"), hashlib.sha256).hexdigest()


def resolve_token(token: bytes | str | None, token_file: str | Path | None) -> bytes | None:
    """The token given directly or read from its file (not both)."""
    if token is not None and token_file is not None:
        raise ValueError("give token or token_file, not both")
    if token_file is not None:
        return load_token(token_file)
    if isinstance(token, str):
        token = token.encode("utf-8")
    if token is not None and not token:
        raise ValueError("token is empty (use None for no auth)")
    return token


def split_addr(addr: str) -> tuple[str, int]:
    """Split ``host:port`` (``[v6]:port`` too)."""
    host, sep, port = addr.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"address {addr!r}: want host:port")
    return host.strip("[]"), int(port)


@dataclass(frozen=True)
class Welcome:
    """The main control's first frame."""

    auth: str  # "none" or "hmac-sha256"
    nonce: str
    proto: str
    max_frame: int  # the largest payload the peer may send
    server: str
    features: tuple[str, ...] = ()  # the optional v1.1 groups it speaks (section 8.1)

    @classmethod
    def parse(cls, msg: Message) -> Welcome:
        if msg.type == "error":
            raise ServerError(msg.get("code") or "", msg.get("message") or "")
        if msg.type != "welcome":
            raise ProtocolError(f"expected welcome, got {msg.type!r} (is this an apollo11 main control?)")
        raw = msg.get("max_frame")
        max_frame = DEFAULT_MAX_FRAME if raw is None else parse_uint(raw)
        if not max_frame or max_frame >= 1 << 32:
            raise ProtocolError(f"bad welcome max_frame {raw!r}")
        return cls(
            auth=msg.get("auth") or "none",
            nonce=msg.get("nonce") or "",
            proto=msg.get("proto") or "",
            max_frame=min(max_frame, MAX_FRAME_LIMIT),
            server=msg.get("server") or "",
            features=tuple(f for f in (msg.get("features") or "").split(",") if f),
        )

    def signature(self, token: bytes | None) -> str | None:
        """The ``auth`` value to send, or None when auth is off."""
        if self.auth in ("none", ""):
            return None
        if not token:
            raise AuthRequired(f"the main control requires auth ({self.auth}) but no token is set")
        return sign(token, self.nonce)


def hello_message(welcome: Welcome, token: bytes | None, client: str | None = None, req: str = "0",
                  admin_token: bytes | None = None) -> Message:
    """The client's ``hello``, signed when the main control asks, with
    the admin token's proof (``admin_auth``, section 8.2) when one is given."""
    msg = Message("hello", {"req": req, "proto": 1})
    if client:
        msg["client"] = client
    if (mac := welcome.signature(token)) is not None:
        msg["auth"] = mac
    if admin_token:
        msg["admin_auth"] = sign(admin_token, welcome.nonce)
    return msg


def register_message(welcome: Welcome, executor_id: str, task_types: list[str], slots: int, token: bytes | None) -> Message:
    """The executor's ``register``, signed when the main control asks."""
    msg = Message("register", {"proto": 1, "executor_id": executor_id, "task_types": task_types, "slots": slots})
    if (mac := welcome.signature(token)) is not None:
        msg["auth"] = mac
    return msg


def _handshake_reply(msg: Message, want: str) -> Message:
    if msg.type == "error":
        raise ServerError(msg.get("code") or "", msg.get("message") or "")
    if msg.type != want:
        raise ProtocolError(f"expected {want}, got {msg.type!r}")
    return msg


class Connection:
    """A blocking connection: whole messages in and out, nothing else.

    ``Connection.connect(addr)`` reads the ``welcome`` (kept as
    ``welcome``); ``hello()`` completes a client's handshake. A frame from
    the peer that cannot be decoded is answered with ``type=error`` (code
    ``malformed`` or ``frame_too_large``), the connection is closed and the
    decode error raised.
    """

    def __init__(self, sock: socket.socket, max_frame: int = DEFAULT_MAX_FRAME) -> None:
        self.sock = sock
        self.reader = FrameReader(max_frame)
        self.welcome: Welcome | None = None
        self.max_frame = DEFAULT_MAX_FRAME  # what we may send
        self._first = True
        self.closed = False

    @classmethod
    def connect(cls, addr: str = DEFAULT_ADDR, timeout: float | None = 10.0, read_welcome: bool = True) -> Connection:
        host, port = split_addr(addr)
        sock = socket.create_connection((host, port), timeout=timeout)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn = cls(sock)
        try:
            if read_welcome:
                conn.welcome = Welcome.parse(conn.recv(timeout))
                conn.max_frame = conn.reader.max_frame = conn.welcome.max_frame
        except BaseException:
            conn.close()
            raise
        return conn

    def hello(self, token: bytes | str | None = None, client: str | None = None, timeout: float | None = 10.0,
              admin_token: bytes | str | None = None) -> Message:
        """Send ``hello`` and return ``hello_ok``; an ``error`` raises ServerError."""
        if self.welcome is None:
            raise ProtocolError("no welcome read yet")
        self.send(hello_message(self.welcome, resolve_token(token, None), client,
                                admin_token=resolve_token(admin_token, None)))
        return _handshake_reply(self.recv(timeout), "hello_ok")

    def send(self, msg: Message) -> None:
        self.send_raw(encode_frame(msg, self.max_frame))

    def send_raw(self, data: bytes) -> None:
        """Send bytes as they are: frames, parts of frames, garbage."""
        try:
            self.sock.sendall(data)
        except OSError as e:
            raise ConnectionLost(f"cannot send: {e}") from e

    def recv(self, timeout: float | None = None) -> Message:
        """The next message; socket.timeout (TimeoutError) when none comes."""
        self.sock.settimeout(timeout)
        while True:
            try:
                msg = self.reader.next()
            except ProtocolError as e:
                self._refuse(e)
                raise
            if msg is not None:
                self._first = False
                return msg
            try:
                data = self.sock.recv(1 << 16)
            except TimeoutError:
                raise
            except OSError as e:
                raise ConnectionLost(f"cannot read: {e}") from e
            if not data:
                raise ConnectionLost("connection closed by the peer")
            self.reader.feed(data)

    def _refuse(self, err: Exception) -> None:
        frame = refusal(err)
        if frame is not None and not (self._first and foreign_banner(err)):
            try:
                self.sock.settimeout(1.0)
                self.sock.sendall(frame)
            except OSError:
                pass
        self.close()

    def close(self) -> None:
        self.closed = True
        self.sock.close()

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncConnection:
    """The asyncio twin of :class:`Connection`."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._r = reader
        self._w = writer
        self.welcome: Welcome | None = None
        self.max_frame = DEFAULT_MAX_FRAME  # what we may send
        self.recv_max_frame = DEFAULT_MAX_FRAME  # what we accept
        self._first = True

    @classmethod
    async def connect(cls, addr: str = DEFAULT_ADDR, timeout: float | None = 10.0, read_welcome: bool = True) -> AsyncConnection:
        host, port = split_addr(addr)
        async with asyncio.timeout(timeout):
            reader, writer = await asyncio.open_connection(host, port, limit=1 << 16)
        conn = cls(reader, writer)
        try:
            if read_welcome:
                async with asyncio.timeout(timeout):
                    m = await conn.recv()
                conn.welcome = Welcome.parse(m)
                conn.max_frame = conn.recv_max_frame = conn.welcome.max_frame
        except BaseException:
            conn.close()
            raise
        return conn

    async def hello(self, token: bytes | str | None = None, client: str | None = None, timeout: float | None = 10.0,
                    admin_token: bytes | str | None = None) -> Message:
        """Send ``hello`` and return ``hello_ok``; an ``error`` raises ServerError."""
        if self.welcome is None:
            raise ProtocolError("no welcome read yet")
        self.send(hello_message(self.welcome, resolve_token(token, None), client,
                                admin_token=resolve_token(admin_token, None)))
        async with asyncio.timeout(timeout):
            m = await self.recv()
        return _handshake_reply(m, "hello_ok")

    def send(self, msg: Message) -> None:
        """Queue a message; ``await drain()`` to wait until it is written."""
        self.send_raw(encode_frame(msg, self.max_frame))

    def send_raw(self, data: bytes) -> None:
        if self._w.is_closing():
            raise ConnectionLost("connection closed")
        self._w.write(data)

    def unsent(self) -> int:
        """Bytes written but not yet taken by the kernel."""
        return self._w.transport.get_write_buffer_size()

    async def drain(self) -> None:
        try:
            await self._w.drain()
        except (OSError, RuntimeError) as e:
            raise ConnectionLost(f"cannot send: {e}") from e

    async def recv(self) -> Message:
        try:
            header = await self._r.readexactly(HEADER_LEN)
            try:
                size = parse_header(header, self.recv_max_frame)
                msg = decode_payload(await self._r.readexactly(size))
            except ProtocolError as e:
                self._refuse(e)
                raise
        except asyncio.IncompleteReadError:
            raise ConnectionLost("connection closed by the peer") from None
        except OSError as e:
            raise ConnectionLost(f"cannot read: {e}") from e
        self._first = False
        return msg

    def _refuse(self, err: Exception) -> None:
        frame = refusal(err)
        if frame is not None and not (self._first and foreign_banner(err)) and not self._w.is_closing():
            self._w.write(frame)  # close() flushes what is buffered
        self.close()

    def close(self) -> None:
        self._w.close()

    async def wait_closed(self) -> None:
        try:
            await self._w.wait_closed()
        except OSError:
            pass
