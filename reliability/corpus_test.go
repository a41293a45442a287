package reliability_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/apollo11/apollo11/wire"
)

// corpusDir is the fuzz targets' checked-in seed corpus.
const corpusDir = "../fuzz/testdata/fuzz"

// loadCorpus returns the payloads of every frame in the fuzz corpus:
// whole frames (FuzzDecode), streams of frames split at their headers
// (FuzzDecodeSplit, FuzzReader) and messages built from FuzzRoundTrip's
// type and key/value seeds.
func loadCorpus(t testing.TB) [][]byte {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(corpusDir, "*", "*"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no fuzz corpus in %s: %v", corpusDir, err)
	}
	var payloads [][]byte
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		values := corpusValues(string(b))
		if strings.Contains(name, "FuzzRoundTrip") {
			if len(values) == 2 {
				payloads = append(payloads, roundTripPayload(values[0], values[1]))
			}
			continue
		}
		for _, v := range values {
			payloads = append(payloads, splitFrames(v)...)
		}
	}
	return payloads
}

// corpusValues parses a `go test fuzz v1` file: one Go literal a line,
// []byte("...") or string("..."); other types are skipped.
func corpusValues(file string) [][]byte {
	var out [][]byte
	for _, line := range strings.Split(file, "\n") {
		open := strings.IndexByte(line, '(')
		if open < 0 || !strings.HasSuffix(line, ")") {
			continue
		}
		switch line[:open] {
		case "[]byte", "string":
			s, err := strconv.Unquote(line[open+1 : len(line)-1])
			if err == nil {
				out = append(out, []byte(s))
			}
		}
	}
	return out
}

// splitFrames cuts a stream at its frame headers; what cannot be cut (a
// lying header, a partial frame) is kept whole as one payload.
func splitFrames(b []byte) [][]byte {
	var out [][]byte
	for len(b) >= wire.HeaderLen {
		n := int(binary.BigEndian.Uint32(b))
		if n == 0 || n > len(b)-wire.HeaderLen {
			break
		}
		out = append(out, b[wire.HeaderLen:wire.HeaderLen+n])
		b = b[wire.HeaderLen+n:]
	}
	if len(b) > 0 {
		out = append(out, b)
	}
	return out
}

// roundTripPayload builds FuzzRoundTrip's message (type, then key/value
// pairs separated by 0xff) as a payload, valid or not.
func roundTripPayload(typ, kv []byte) []byte {
	p := append([]byte("type="), typ...)
	parts := bytes.Split(kv, []byte{0xff})
	for i := 0; i+1 < len(parts); i += 2 {
		p = append(p, '\n')
		p = append(p, parts[i]...)
		p = append(p, '=')
		p = append(p, parts[i+1]...)
	}
	return p
}

// frame puts a header in front of payload.
func frame(payload []byte) []byte {
	f := binary.BigEndian.AppendUint32(make([]byte, 0, wire.HeaderLen+len(payload)), uint32(len(payload)))
	return append(f, payload...)
}

// interesting are values and bytes that tend to find edges.
var (
	interestingValues = []string{"", "0", "1", "-1", "18446744073709551615", "18446744073709551616", "007",
		"99999999999999999999999", "true", "false", "TRUE", "a,b,,c", ",", "\\e", "\\n", "\\\\", "\\x", "\\",
		"é", "\u2028", "\U0001F680", strings.Repeat("x", 300), "1,2,3", "9", "10", "65536", "65537", "succeeded",
		"failed", "running", "-9223372036854775808", "9223372036854775808"}
	interestingBytes = []byte{'=', '\n', '\\', 0, 0xff, 0xc3, 'A', ' ', ',', '.', '9'}
	knownTypes       = []string{"hello", "register", "submit", "query", "cancel", "list", "stats", "state_get",
		"heartbeat", "started", "progress", "result", "bye", "welcome", "task", "nope", "Submit", ""}
)

// mutate returns a random mutant of a corpus payload, as bytes on the
// wire: usually one frame, sometimes two, or a frame whose header lies.
func mutate(rng *rand.Rand, seeds [][]byte) []byte {
	p := bytes.Clone(seeds[rng.IntN(len(seeds))])
	switch rng.IntN(14) {
	case 0: // the seed as it is
	case 1: // bit flips
		for i := rng.IntN(4); i >= 0 && len(p) > 0; i-- {
			p[rng.IntN(len(p))] ^= 1 << rng.IntN(8)
		}
	case 2: // interesting bytes
		for i := rng.IntN(3); i >= 0 && len(p) > 0; i-- {
			p[rng.IntN(len(p))] = interestingBytes[rng.IntN(len(interestingBytes))]
		}
	case 3: // truncated payload, honest header
		if len(p) > 1 {
			p = p[:1+rng.IntN(len(p)-1)]
		}
	case 4: // truncated frame: the header announces more than is sent
		f := frame(p)
		return f[:wire.HeaderLen+rng.IntN(len(p)+1)]
	case 5: // a lying header
		f := frame(p)
		lies := []uint32{0, 1, uint32(len(p)) - 1, uint32(len(p)) + 1, uint32(len(p)) + 7, 1<<20 + 1, 1 << 31, 1<<32 - 1}
		binary.BigEndian.PutUint32(f, lies[rng.IntN(len(lies))])
		return f
	case 6: // a line duplicated
		lines := bytes.Split(p, []byte{'\n'})
		i := rng.IntN(len(lines))
		lines = append(lines[:i+1], lines[i:]...)
		p = bytes.Join(lines, []byte{'\n'})
	case 7: // the frame twice
		f := frame(p)
		return append(f, f...)
	case 8: // spliced with another seed
		q := seeds[rng.IntN(len(seeds))]
		p = append(p[:rng.IntN(len(p)+1)], q[rng.IntN(len(q)+1):]...)
	case 9, 10: // a value replaced
		p = replaceValue(rng, p, interestingValues[rng.IntN(len(interestingValues))])
	case 11: // a key added: unknown, upper case, prefixed, too long
		keys := []string{"zz_unknown", "X", "arg.", "out.", "state.add.", strings.Repeat("k", 65), "req", "type", "task_id"}
		p = append(p, "\n"+keys[rng.IntN(len(keys))]+"="+interestingValues[rng.IntN(len(interestingValues))]...)
	case 12: // the type swapped
		p = replaceLine(p, 0, "type="+knownTypes[rng.IntN(len(knownTypes))])
	default: // random bytes
		p = make([]byte, 1+rng.IntN(64))
		for i := range p {
			p[i] = byte(rng.UintN(256))
		}
	}
	return frame(p)
}

// replaceValue sets the value of a random line of p.
func replaceValue(rng *rand.Rand, p []byte, v string) []byte {
	lines := bytes.Split(p, []byte{'\n'})
	i := rng.IntN(len(lines))
	k, _, ok := bytes.Cut(lines[i], []byte{'='})
	if !ok || i == 0 && string(k) == "type" {
		return p
	}
	return replaceLine(p, i, string(k)+"="+v)
}

func replaceLine(p []byte, i int, line string) []byte {
	lines := bytes.Split(p, []byte{'\n'})
	if i < len(lines) {
		lines[i] = []byte(line)
	}
	return bytes.Join(lines, []byte{'\n'})
}

// verdict is what the main control must do with a mutant, found by
// decoding it as the server does.
type verdict int

const (
	goesOn    verdict = iota // whole frames, well formed: answered, connection kept
	closes                   // malformed or too large: error, then close
	hangs                    // ends in a partial frame: the server waits for more
	forbidden                // not sent (debug would log every frame)
	leaves                   // bye: an executor leaves
)

// judge decodes mutant as the main control would.
func judge(dec *wire.Decoder, mutant []byte) (verdict, wire.Code) {
	v := goesOn
	for len(mutant) > 0 {
		m, n, err := dec.Decode(mutant)
		switch {
		case err != nil:
			var tooBig *wire.FrameTooLargeError
			if errors.As(err, &tooBig) {
				return closes, wire.CodeFrameTooLarge
			}
			return closes, wire.CodeMalformed
		case m == nil:
			return hangs, ""
		}
		switch m.Type() {
		case "debug":
			return forbidden, ""
		case "bye":
			v = leaves
		}
		mutant = mutant[n:]
	}
	return v, ""
}
