"""The codec against wire-v1 sections 1 and 2, without any process."""

from __future__ import annotations

import struct
import unittest

from apollo11.codec import (
    FrameReader,
    Message,
    decode_frame,
    decode_payload,
    encode_frame,
    encode_payload,
    foreign_banner,
    refusal,
)
from apollo11.errors import EncodeError, FrameTooLargeError, MalformedError


def frame(payload: bytes) -> bytes:
    return struct.pack(">I", len(payload)) + payload


class RoundTrip(unittest.TestCase):
    def test_escapes_round_trip(self) -> None:
        m = Message("submit", {"req": "1", "task_type": "echo", "arg.msg": "a=b\nc\\d\\n\\e", "arg.empty": "",
                               "arg.utf8": "é€😀", "arg.cr": "x\ry"})
        p = encode_payload(m)
        self.assertEqual(p.split(b"\n")[0], b"type=submit")
        self.assertIn(b"arg.msg=a\\eb\\nc\\\\d\\\\n\\\\e", p)
        self.assertEqual(decode_payload(p), m)
        self.assertEqual(encode_payload(decode_payload(p)), p)  # byte for byte

    def test_valid_payload_reencodes_to_itself(self) -> None:
        for p in [b"type=x", b"type=x\nk=", b"type=pong\nseq=1\nrunning=1.2,3.4", b"type=a\nk=\\e\\n\\\\"]:
            self.assertEqual(encode_payload(decode_payload(p)), p)

    def test_one_trailing_lf_is_the_same_message(self) -> None:
        self.assertEqual(decode_payload(b"type=x\nk=v\n"), decode_payload(b"type=x\nk=v"))

    def test_typed_values(self) -> None:
        m = Message("heartbeat", {"seq": 3, "running": [], "ok": True, "ids": [1, 2]})
        self.assertEqual(encode_payload(m), b"type=heartbeat\nseq=3\nrunning=\nok=true\nids=1,2")
        d = decode_payload(encode_payload(m))
        self.assertEqual(d.uint("seq"), 3)
        self.assertEqual(d.list("running"), [])
        self.assertEqual(d.list("ids"), ["1", "2"])
        self.assertTrue(d.boolean("ok"))

    def test_frames_split_and_joined(self) -> None:
        a = encode_frame(Message("a", {"k": "1"}))
        b = encode_frame(Message("b", {"k": "x" * 5000}))
        stream = a + b + a
        r = FrameReader()
        got = []
        for i in range(0, len(stream), 7):  # one frame spans many reads
            r.feed(stream[i : i + 7])
            got.extend(r)
        self.assertEqual([m.type for m in got], ["a", "b", "a"])
        r.feed(stream)  # many frames in one read
        self.assertEqual([m.type for m in r], ["a", "b", "a"])
        self.assertEqual(r.buffered(), 0)
        self.assertEqual(decode_frame(a[:-1]), (None, 0))


class Malformed(unittest.TestCase):
    cases = {
        b"": "empty payload",
        b"\n": "empty line",
        b"type=x\n\n": "empty line",
        b"type=x\n\nk=v": "empty line",
        b"\xff": "invalid UTF-8",
        b"type=\xc3(": "invalid UTF-8",
        b"type=x\nnoequals": "line without '='",
        b"type=x\nKey=v": "key byte not in a-z 0-9 _ . -",
        b"type=x\nk y=v": "key byte not in a-z 0-9 _ . -",
        b"type=x\n=v": "empty key",
        b"type=x\n" + b"k" * 65 + b"=v": "key longer than 64 bytes",
        b"type=x\narg.=v": "key is a bare prefix",
        b"type=x\nout.=v": "key is a bare prefix",
        b"type=x\nstate.=v": "key is a bare prefix",
        b"type=x\nstate.set.=v": "key is a bare prefix",
        b"type=x\nstate.add.=v": "key is a bare prefix",
        b"type=x\nk=1\nk=2": "duplicate key k",
        b"type=x\nk=a=b": "raw '=' in value",
        b"type=x\nk=a\\": "lone '\\' at end of value",
        b"type=x\nk=a\\t": "unknown escape sequence in value",
        b"k=v": "missing type",
        b"type=x\n" + b"\n".join(b"k%d=" % i for i in range(1024)): "more than 1024 keys",
    }

    def test_each_rule(self) -> None:
        for payload, reason in self.cases.items():
            with self.subTest(payload=payload[:40]):
                with self.assertRaises(MalformedError) as cm:
                    decode_payload(payload)
                self.assertEqual(cm.exception.reason, reason)

    def test_limits_are_inclusive(self) -> None:
        decode_payload(b"type=x\n" + b"k" * 64 + b"=v")
        decode_payload(b"type=x\narg.a=v\nstate.set.b=1")
        decode_payload(b"type=x\n" + b"\n".join(b"k%d=" % i for i in range(1023)))

    def test_offset_counts_bytes(self) -> None:
        with self.assertRaises(MalformedError) as cm:
            decode_payload("type=é\nK=v".encode())
        self.assertEqual(cm.exception.offset, len("type=é\n".encode()))

    def test_zero_length_frame(self) -> None:
        with self.assertRaises(MalformedError):
            decode_frame(b"\x00\x00\x00\x00")

    def test_too_large_before_the_payload(self) -> None:
        r = FrameReader(max_frame=100)
        r.feed(struct.pack(">I", 101))  # no payload: refused on the header alone
        with self.assertRaises(FrameTooLargeError) as cm:
            r.next()
        self.assertEqual((cm.exception.size, cm.exception.max_frame), (101, 100))
        self.assertIsNotNone(decode_frame(frame(b"type=" + b"x" * 95), 100)[0])

    def test_refusal_frames(self) -> None:
        m = decode_frame(refusal(MalformedError("empty line", 3)))[0]
        self.assertEqual((m.type, m["code"]), ("error", "malformed"))
        m = decode_frame(refusal(FrameTooLargeError(5, 4)))[0]
        self.assertEqual(m["code"], "frame_too_large")
        self.assertIsNone(refusal(OSError("x")))
        self.assertTrue(foreign_banner(FrameTooLargeError(struct.unpack(">I", b"SSH-")[0], 1 << 20)))
        self.assertFalse(foreign_banner(FrameTooLargeError(1 << 24, 1 << 20)))


class EncodeRefusals(unittest.TestCase):
    def test_bad_keys(self) -> None:
        for key in ["", "Upper", "a b", "k" * 65, "arg.", "state.add.", "é"]:
            with self.subTest(key=key), self.assertRaises(EncodeError):
                encode_payload(Message("x", {key: "v"}))

    def test_too_many_keys(self) -> None:
        encode_payload(Message("x", {f"k{i}": "" for i in range(1023)}))
        with self.assertRaises(EncodeError):
            encode_payload(Message("x", {f"k{i}": "" for i in range(1024)}))

    def test_not_utf8(self) -> None:
        with self.assertRaises(EncodeError):
            encode_payload(Message("x", {"k": "\udcff"}))

    def test_frame_too_large(self) -> None:
        with self.assertRaises(FrameTooLargeError):
            encode_frame(Message("x", {"k": "v" * 100}), max_frame=50)

    def test_type_cannot_go(self) -> None:
        m = Message("x")
        with self.assertRaises(EncodeError):
            del m["type"]
        with self.assertRaises(EncodeError):
            Message("x", {"k": object()})  # type: ignore[dict-item]


if __name__ == "__main__":
    unittest.main()
