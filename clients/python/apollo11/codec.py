"""The wire-v1 codec (sections 1 and 2), without any I/O.

A frame is a 4-byte big-endian payload length, then the payload: UTF-8
``key=value`` lines separated by LF. Values escape ``\\`` as ``\\\\``, LF
as ``\\n`` and ``=`` as ``\\e``. Decoding checks every rule of sections 1
and 2 and raises :class:`MalformedError` or :class:`FrameTooLargeError`;
encoding refuses what no peer could decode with :class:`EncodeError`.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Union

from .errors import EncodeError, FrameTooLargeError, MalformedError, ReplyError

DEFAULT_MAX_FRAME = 1 << 20
"""The default maximum payload size: 1 MiB."""
HEADER_LEN = 4
MAX_KEYS = 1024
MAX_KEY_LEN = 64
BARE_PREFIXES = frozenset({"arg.", "out.", "state.", "state.set.", "state.add."})
"""Keys that are exactly one of these are malformed in any payload."""

_KEY = re.compile(r"[a-z0-9_.\-]{1,64}")
_KEY_BYTE = re.compile(r"[a-z0-9_.\-]*")
_VALUE = re.compile(r"(?:[^\\=]|\\[\\ne])*")
_ESCAPE = re.compile(r"\\(.)")
_UNESCAPED = {"\\": "\\", "n": "\n", "e": "="}
_HEADER = struct.Struct(">I")

Value = Union[str, int, bool, Iterable[Union[str, int]]]
"""What a field may be set to: text, a number, a boolean or a list."""


def key_problem(key: str) -> str:
    """Return why ``key`` is not a valid wire key, or "" when it is."""
    if not key:
        return "empty key"
    if len(key) > MAX_KEY_LEN:
        return "key longer than 64 bytes"
    if not _KEY.fullmatch(key):
        return "key byte not in a-z 0-9 _ . -"
    if key in BARE_PREFIXES:
        return "key is a bare prefix"
    return ""


def valid_key(key: str) -> bool:
    """Report whether ``key`` is a well-formed key."""
    return key_problem(key) == ""


def to_text(value: Value) -> str:
    """Render a field value: booleans as true/false, lists comma-separated."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int)):
        return str(value)
    if isinstance(value, Iterable):
        return ",".join(str(v) for v in value)
    raise EncodeError(f"cannot send a value of type {type(value).__name__}")


class Message:
    """One payload: its ``type`` and the other keys in the order set.

    Fields are text; ``Message("submit", {"task_type": "echo"})`` or
    ``m["arg.msg"] = "hi"``. Numbers, booleans and lists given as values
    are stored as their wire text.
    """

    __slots__ = ("_fields",)

    def __init__(
        self,
        type: str,
        fields: Mapping[str, Any] | Iterable[tuple[str, Any]] | None = None,
    ) -> None:
        self._fields: dict[str, str] = {"type": type}
        if fields is not None:
            items = fields.items() if isinstance(fields, Mapping) else fields
            for k, v in items:
                self[k] = v

    @property
    def type(self) -> str:
        return self._fields["type"]

    def __getitem__(self, key: str) -> str:
        return self._fields[key]

    def __setitem__(self, key: str, value: Value) -> None:
        if key == "type" and not isinstance(value, str):
            raise EncodeError("type must be text")
        self._fields[key] = to_text(value)

    def __delitem__(self, key: str) -> None:
        if key == "type":
            raise EncodeError("every message has a type")
        del self._fields[key]

    def __contains__(self, key: object) -> bool:
        return key in self._fields

    def __iter__(self) -> Iterator[str]:
        return iter(self._fields)

    def __len__(self) -> int:
        return len(self._fields)

    def __eq__(self, other: object) -> bool:
        # Key order carries no meaning (section 2).
        return isinstance(other, Message) and self._fields == other._fields

    def __repr__(self) -> str:
        return f"Message({self._fields!r})"

    def get(self, key: str, default: str | None = None) -> str | None:
        return self._fields.get(key, default)

    def items(self) -> Iterable[tuple[str, str]]:
        return self._fields.items()

    def with_prefix(self, prefix: str) -> dict[str, str]:
        """The fields under ``prefix`` (such as ``out.``), without it."""
        n = len(prefix)
        return {k[n:]: v for k, v in self._fields.items() if k.startswith(prefix)}

    def uint(self, key: str, default: int | None = None) -> int:
        """Read a number: decimal, no sign, no leading zero, within uint64."""
        raw = self._fields.get(key)
        if raw is None:
            if default is None:
                raise ReplyError(f"{self.type}: missing key {key}")
            return default
        n = parse_uint(raw)
        if n is None:
            raise ReplyError(f"{self.type}: {key}={raw!r} is not a number")
        return n

    def boolean(self, key: str, default: bool | None = None) -> bool:
        """Read a boolean: exactly ``true`` or ``false``."""
        raw = self._fields.get(key)
        if raw is None:
            if default is None:
                raise ReplyError(f"{self.type}: missing key {key}")
            return default
        if raw not in ("true", "false"):
            raise ReplyError(f"{self.type}: {key}={raw!r} is not true or false")
        return raw == "true"

    def list(self, key: str) -> list[str]:
        """Read a list; an absent key is an empty list (section 3)."""
        raw = self._fields.get(key, "")
        return raw.split(",") if raw else []


def parse_uint(raw: str) -> int | None:
    """Parse a wire number, or return None when ``raw`` is not one."""
    if not raw or not raw.isascii() or not raw.isdigit():
        return None
    if len(raw) > 1 and raw[0] == "0":
        return None
    n = int(raw)
    return n if n < 1 << 64 else None


def escape(value: str) -> str:
    """Escape a value: backslash first, so that no escape is escaped twice."""
    if "\\" in value:
        value = value.replace("\\", "\\\\")
    if "\n" in value:
        value = value.replace("\n", "\\n")
    if "=" in value:
        value = value.replace("=", "\\e")
    return value


def unescape(raw: str) -> str:
    """Undo :func:`escape`; ``raw`` must be a valid escaped value."""
    if "\\" not in raw:
        return raw
    return _ESCAPE.sub(lambda m: _UNESCAPED[m.group(1)], raw)


def encode_payload(msg: Message) -> bytes:
    """Encode a payload: ``type`` first, keys checked, values escaped."""
    if len(msg) > MAX_KEYS:
        raise EncodeError(f"{len(msg)} keys: a payload holds at most {MAX_KEYS}")
    lines = []
    for k, v in msg.items():
        problem = key_problem(k)
        if problem:
            raise EncodeError(f"bad key {k!r}: {problem}")
        lines.append(f"{k}={escape(v)}")
    try:
        return "\n".join(lines).encode("utf-8")
    except UnicodeEncodeError as e:
        raise EncodeError(f"a value is not valid UTF-8 text: {e.reason}") from None


def encode_frame(msg: Message, max_frame: int = DEFAULT_MAX_FRAME) -> bytes:
    """Encode a whole frame; one over ``max_frame`` is refused."""
    payload = encode_payload(msg)
    if len(payload) > max_frame:
        raise FrameTooLargeError(len(payload), max_frame)
    return _HEADER.pack(len(payload)) + payload


def parse_header(header: bytes, max_frame: int = DEFAULT_MAX_FRAME) -> int:
    """Read a 4-byte header: the payload size, checked against the limit."""
    size: int = _HEADER.unpack(header)[0]
    if size == 0:
        raise MalformedError("zero-length frame", 0)
    if size > max_frame:
        raise FrameTooLargeError(size, max_frame)
    return size


def decode_payload(payload: bytes) -> Message:
    """Decode one payload (without its header), checking section 2."""
    if not payload:
        raise MalformedError("empty payload", 0)
    try:
        text = payload.decode("utf-8")
    except UnicodeDecodeError as e:
        raise MalformedError("invalid UTF-8", e.start) from None
    if text.endswith("\n"):
        text = text[:-1]  # one trailing LF is allowed and ignored
    fields: dict[str, str] = {}
    ascii_only = text.isascii()
    where = 0  # the line's offset in payload bytes, for the error
    for line in text.split("\n"):
        if len(fields) == MAX_KEYS:
            raise MalformedError("more than 1024 keys", where)
        key, eq, raw = line.partition("=")
        if not eq:
            raise MalformedError("empty line" if not line else "line without '='", where)
        if not _KEY_BYTE.fullmatch(key):
            raise MalformedError("key byte not in a-z 0-9 _ . -", where)
        problem = key_problem(key)
        if problem:
            raise MalformedError(problem, where)
        if key in fields:
            raise MalformedError(f"duplicate key {key}", where)
        if ("\\" in raw or "=" in raw) and not _VALUE.fullmatch(raw):
            raise MalformedError(_value_problem(raw), where + len(key) + 1)
        fields[key] = unescape(raw)
        where += (len(line) if ascii_only else len(line.encode("utf-8"))) + 1
    if "type" not in fields:
        raise MalformedError("missing type", 0)
    msg = Message(fields.pop("type"))
    msg._fields.update(fields)
    return msg


def _value_problem(raw: str) -> str:
    i = 0
    while i < len(raw):
        c = raw[i]
        if c == "=":
            return "raw '=' in value"
        if c == "\\":
            if i + 1 == len(raw):
                return "lone '\\' at end of value"
            if raw[i + 1] not in "\\ne":
                return "unknown escape sequence in value"
            i += 1
        i += 1
    return "bad value"


def decode_frame(data: bytes, max_frame: int = DEFAULT_MAX_FRAME) -> tuple[Message | None, int]:
    """Decode the first frame of ``data``: (message, bytes used), or (None, 0)
    while ``data`` holds only part of it."""
    if len(data) < HEADER_LEN:
        return None, 0
    size = parse_header(bytes(data[:HEADER_LEN]), max_frame)
    if len(data) < HEADER_LEN + size:
        return None, 0
    return decode_payload(bytes(data[HEADER_LEN : HEADER_LEN + size])), HEADER_LEN + size


class FrameReader:
    """An incremental decoder: feed it bytes as they arrive, take messages.

    A header over ``max_frame`` raises at once, before its payload is
    buffered. After any decode error the stream cannot be trusted: the
    peer answers with :func:`refusal` and closes.
    """

    def __init__(self, max_frame: int = DEFAULT_MAX_FRAME) -> None:
        self.max_frame = max_frame
        self._buf = bytearray()

    def feed(self, data: bytes) -> None:
        self._buf += data

    def buffered(self) -> int:
        return len(self._buf)

    def next(self) -> Message | None:
        """The next whole message, or None until more bytes arrive."""
        msg, used = decode_frame(self._buf, self.max_frame)
        if msg is not None:
            del self._buf[:used]
        return msg

    def __iter__(self) -> Iterator[Message]:
        while (msg := self.next()) is not None:
            yield msg


def refusal(err: Exception) -> bytes | None:
    """The frame a peer sends before it closes on a decode error: code
    frame_too_large or malformed. None for any other error."""
    if isinstance(err, (MalformedError, FrameTooLargeError)):
        return encode_frame(Message("error", {"code": err.code, "message": str(err)}))
    return None


def foreign_banner(err: Exception) -> bool:
    """Whether a first frame's header was printable ASCII ("SSH-", "HTTP"):
    another service's banner, which would not understand a refusal."""
    if not isinstance(err, FrameTooLargeError):
        return False
    return all(0x20 <= b <= 0x7E for b in _HEADER.pack(err.size))
