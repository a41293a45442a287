package fuzz

import (
	"bytes"
	"encoding/binary"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/wire"
)

var genCorpus = flag.Bool("gencorpus", false, "rewrite the seed corpus in testdata/fuzz")

// specMessages has one realistic message of every type of the spec
// (sections 3 to 5), as key, value, ... with type first.
var specMessages = []struct {
	name string
	kv   []string
}{
	{"welcome", []string{"type", "welcome", "proto", "1", "server", "apollo11/0.1.0", "nonce", "9f86d081884c7d659a2feaa0c55ad015", "auth", "hmac-sha256", "max_frame", "1048576"}},
	{"register", []string{"type", "register", "proto", "1", "executor_id", "exec-01.eu-west:A_7", "task_types", "image.resize,email.send", "slots", "4", "auth", "5d41402abc4b2a76b9719d911017c5925d41402abc4b2a76b9719d911017c592"}},
	{"registered", []string{"type", "registered", "executor_id", "exec-01.eu-west:A_7", "heartbeat_ms", "5000", "timeout_ms", "15000", "state_version", "42"}},
	{"hello", []string{"type", "hello", "req", "c1-1", "client", "apollo11-cli/0.1", "proto", "1"}},
	{"hello_ok", []string{"type", "hello_ok", "req", "c1-1"}},
	{"heartbeat", []string{"type", "heartbeat", "seq", "17", "running", "12.3,15.1"}},
	{"heartbeat_idle", []string{"type", "heartbeat", "seq", "1", "running", ""}},
	{"heartbeat_epochs", []string{"type", "heartbeat", "seq", "18", "running", "12.4294967297,15.18446744073709551615"}},
	{"pong", []string{"type", "pong", "seq", "17"}},
	{"task", []string{"type", "task", "task_id", "12", "version", "3", "task_type", "image.resize", "attempt", "1", "max_attempts", "3", "timeout_ms", "30000", "trace_id", "4bf92f3577b34da6a3ce929d0e0e4736", "state_version", "42", "arg.src", "s3://photos/2024/06/IMG_0042.jpg", "arg.width", "1024"}},
	{"task_epoch", []string{"type", "task", "task_id", "12", "version", "8589934593", "task_type", "image.resize", "attempt", "2", "max_attempts", "3", "timeout_ms", "30000", "trace_id", "4bf92f3577b34da6a3ce929d0e0e4736", "state_version", "42"}},
	{"started", []string{"type", "started", "task_id", "12", "version", "3"}},
	{"result_max_version", []string{"type", "result", "task_id", "12", "version", "18446744073709551615", "status", "succeeded"}},
	{"progress", []string{"type", "progress", "task_id", "12", "version", "3", "percent", "40", "note", "resized 2 of 5\nnext: thumbnails"}},
	{"result", []string{"type", "result", "task_id", "12", "version", "3", "status", "succeeded", "out.width", "1024", "out.path", "s3://thumbs/IMG_0042.jpg", "state.set.last_image", "12", "state.add.images_done", "1", "state.add.bytes_saved", "-2048"}},
	{"result_failed", []string{"type", "result", "task_id", "12", "version", "4", "status", "failed", "retryable", "false", "error", "decode: bad header a=b \\x00"}},
	{"result_ack", []string{"type", "result_ack", "task_id", "12", "version", "3", "accepted", "false", "reason", "stale"}},
	{"state_get", []string{"type", "state_get", "req", "c1-7", "keys", "images_done,last_image"}},
	{"state", []string{"type", "state", "req", "c1-7", "state_version", "43", "state.images_done", "17", "state.last_image", "12"}},
	{"bye", []string{"type", "bye", "reason", "shutting down for upgrade"}},
	{"bye_ack", []string{"type", "bye_ack"}},
	{"cancel_executor", []string{"type", "cancel", "task_id", "12", "version", "3"}},
	{"cancel_client", []string{"type", "cancel", "req", "c1-9", "task_id", "12"}},
	{"cancelled", []string{"type", "cancelled", "req", "c1-9", "task_id", "12"}},
	{"submit", []string{"type", "submit", "req", "c1-2", "task_type", "image.resize", "arg.src", "s3://photos/a=b.jpg", "arg.width", "1024", "priority", "9", "max_attempts", "5", "timeout_ms", "30000", "delay_ms", "250", "key", "upload-7781", "trace_id", "4bf92f3577b34da6a3ce929d0e0e4736", "depends_on", "10,11", "wait", "true"}},
	{"submitted", []string{"type", "submitted", "req", "c1-2", "task_id", "12", "duplicate", "true"}},
	{"done", []string{"type", "done", "req", "c1-2", "task_id", "12", "state", "succeeded", "out.width", "1024", "out.path", "s3://thumbs/IMG_0042.jpg"}},
	{"query", []string{"type", "query", "req", "c1-3", "task_id", "12"}},
	{"task_state", []string{"type", "task_state", "req", "c1-3", "task_id", "12", "version", "3", "state", "running", "attempt", "1", "max_attempts", "3", "task_type", "image.resize", "executor_id", "exec-01.eu-west:A_7", "created_ms", "1700000000000", "updated_ms", "1700000001234", "trace_id", "4bf92f3577b34da6a3ce929d0e0e4736"}},
	{"list", []string{"type", "list", "req", "c1-4", "state", "failed", "limit", "100", "after", "10"}},
	{"tasks", []string{"type", "tasks", "req", "c1-4", "count", "3", "ids", "11,12,15", "next", "15"}},
	{"stats", []string{"type", "stats", "req", "c1-5", "tasks.waiting", "0", "tasks.pending", "3", "tasks.dispatched", "1", "tasks.running", "2", "tasks.retrying", "0", "tasks.succeeded", "120", "tasks.failed", "4", "tasks.cancelled", "1", "executors", "2", "state_version", "43", "uptime_ms", "360000"}},
	{"debug", []string{"type", "debug", "req", "c1-6", "on", "true"}},
	{"debug_ok", []string{"type", "debug_ok", "req", "c1-6"}},
	{"error", []string{"type", "error", "req", "c1-2", "code", "bad_request", "message", "priority: not a number (0-9): \"10=ten\""}},
}

// edgeFrames are frames at the edges of spec sections 1 and 2: malformed
// ones every decoder must reject, and a few valid or incomplete ones close
// to them.
var edgeFrames = []struct {
	name  string
	frame []byte
}{
	{"zero_length", hdr(0)},
	{"oversize_header", append(hdr(wire.DefaultMaxFrame+1), "type=t"...)},
	{"max_uint32_header", hdr(0xFFFFFFFF)},
	{"announced_1MiB_10_bytes", append(hdr(wire.DefaultMaxFrame-1), "type=t\nab="...)},
	{"bad_escape", frameOf("type=t\nnote=a\\xb")},
	{"lone_backslash", frameOf("type=t\nnote=a\\")},
	{"raw_equals", frameOf("type=t\nnote=a=b")},
	{"duplicate_key", frameOf("type=t\nseq=1\nseq=2")},
	{"duplicate_type", frameOf("type=pong\ntype=ping")},
	{"upper_case_key", frameOf("type=t\nTask_id=1")},
	{"empty_key", frameOf("type=t\n=v")},
	{"bare_prefix", frameOf("type=result\nstate.set.=1")},
	{"key_65_bytes", frameOf("type=t\n" + strings.Repeat("k", 65) + "=v")},
	{"two_trailing_lf", frameOf("type=t\n\n")},
	{"lone_lf", frameOf("\n")},
	{"no_type", frameOf("seq=1")},
	{"invalid_utf8", frameOf("type=t\nnote=\xc3\x28")},
	{"trailing_lf_valid", frameOf("type=pong\nseq=1\n")},
	{"partial_frame", frameOf("type=pong\nseq=17")[:9]},
}

func hdr(n uint32) []byte { return binary.BigEndian.AppendUint32(nil, n) }

func frameOf(payload string) []byte { return append(hdr(uint32(len(payload))), payload...) }

func specFrame(tb testing.TB, kv []string) []byte {
	tb.Helper()
	m := &wire.Message{}
	for i := 0; i < len(kv); i += 2 {
		m.Fields = append(m.Fields, wire.Field{Key: kv[i], Value: kv[i+1]})
	}
	b, err := wire.AppendFrame(nil, m)
	require.NoError(tb, err)
	return b
}

// corpusFile renders one seed in the go test fuzz v1 format.
func corpusFile(args ...any) []byte {
	var b bytes.Buffer
	b.WriteString("go test fuzz v1\n")
	for _, a := range args {
		switch v := a.(type) {
		case []byte:
			fmt.Fprintf(&b, "[]byte(%s)\n", strconv.Quote(string(v)))
		case string:
			fmt.Fprintf(&b, "string(%s)\n", strconv.Quote(v))
		case uint:
			fmt.Fprintf(&b, "uint(%d)\n", v)
		default:
			panic(fmt.Sprintf("corpusFile: %T", a))
		}
	}
	return b.Bytes()
}

// TestGenCorpus writes the seed corpus when run with -gencorpus; otherwise
// it checks that the checked-in corpus is what it would write.
func TestGenCorpus(t *testing.T) {
	files := map[string][]byte{}
	add := func(target, name string, args ...any) { files[filepath.Join(target, name)] = corpusFile(args...) }

	var executor, client, all bytes.Buffer
	for _, sm := range specMessages {
		fr := specFrame(t, sm.kv)
		add("FuzzDecode", sm.name, fr)
		all.Write(fr)
		switch sm.name {
		case "welcome", "register", "registered", "heartbeat", "pong", "task", "started", "progress", "result", "result_ack", "bye", "bye_ack":
			executor.Write(fr)
		case "hello", "hello_ok", "submit", "submitted", "done", "query", "task_state", "list", "tasks", "error":
			client.Write(fr)
		}
	}
	for _, mf := range edgeFrames {
		add("FuzzDecode", "edge_"+mf.name, mf.frame)
	}
	add("FuzzDecode", "keys_1024", frameOf(manyKeys(1024)))
	add("FuzzDecode", "keys_1025", frameOf(manyKeys(1025)))

	goodThenBad := append(specFrame(t, specMessages[5].kv), frameOf("type=t\nA=1")...)
	goodThenBig := append(specFrame(t, specMessages[5].kv), hdr(wire.DefaultMaxFrame+1)...)
	add("FuzzDecodeSplit", "executor_session", executor.Bytes(), uint(37))
	add("FuzzDecodeSplit", "client_session", client.Bytes(), uint(200))
	add("FuzzDecodeSplit", "every_type", all.Bytes(), uint(1000))
	add("FuzzDecodeSplit", "good_then_malformed", goodThenBad, uint(30))
	add("FuzzDecodeSplit", "good_then_too_large", goodThenBig, uint(31))
	add("FuzzDecodeSplit", "partial_at_end", append(client.Bytes(), frameOf("type=pong")[:7]...), uint(5))

	add("FuzzReader", "executor_session_1_byte", executor.Bytes(), []byte{0})
	add("FuzzReader", "client_session_chunks", client.Bytes(), []byte{2, 7, 250, 0, 31})
	add("FuzzReader", "every_type_whole", all.Bytes(), []byte{})
	add("FuzzReader", "announced_1MiB_10_bytes", edgeFrames[3].frame, []byte{3})
	add("FuzzReader", "good_then_malformed", goodThenBad, []byte{5})
	add("FuzzReader", "big_frame", frameOf("type=blob\ndata="+strings.Repeat("x", 66000)), []byte{255, 128})

	add("FuzzRoundTrip", "task", "task", []byte("task_id\xff12\xffarg.src\xffs3://a/b.jpg"))
	add("FuzzRoundTrip", "escapes", "result", []byte("error\xffa=b\\c\nd\xffout.x\xff\xffout.y\xff=\n\\"))
	add("FuzzRoundTrip", "unicode", "progress", []byte("note\xff日本 ✓ 🚀\xffpercent\xff40"))
	add("FuzzRoundTrip", "duplicate", "t", []byte("a\xff1\xffa\xff2"))
	add("FuzzRoundTrip", "duplicate_type", "t", []byte("type\xffu"))
	add("FuzzRoundTrip", "bad_key", "t", []byte("Key\xffv"))
	add("FuzzRoundTrip", "bare_prefix", "t", []byte("state.add.\xff1"))
	add("FuzzRoundTrip", "escaped_type", "a=b\n\\", []byte{})

	dir := filepath.Join("testdata", "fuzz")
	if *genCorpus {
		require.NoError(t, os.RemoveAll(dir))
		for name, content := range files {
			require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(dir, name), content, 0o644))
		}
		t.Logf("wrote %d seed files to %s", len(files), dir)
		return
	}
	for name, content := range files {
		got, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err, "seed corpus is stale: run go test ./fuzz -run '^TestGenCorpus$' -gencorpus")
		require.Equal(t, string(content), string(got), "seed %s is stale", name)
	}
}

// manyKeys returns a payload of type=t and n-1 more keys.
func manyKeys(n int) string {
	var sb strings.Builder
	sb.WriteString("type=t")
	for i := 1; i < n; i++ {
		fmt.Fprintf(&sb, "\nk%04d=v", i)
	}
	return sb.String()
}
