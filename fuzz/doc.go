// Package fuzz holds the native Go fuzz targets for the wire codec
// (github.com/apollo11/apollo11/wire). It has no code of its own.
// The targets are in fuzz_test.go. Their seed corpus is checked in,
// one file per input, in testdata/fuzz/<target>/.
//
// A plain `go test ./fuzz` runs every seed as a regular test. To fuzz
// longer, run one target at a time. The pattern must match exactly one
// target.
//
//	go test ./fuzz -run='^$' -fuzz='^FuzzDecode$' -fuzztime=10m
//	go test ./fuzz -run='^$' -fuzz='^FuzzDecodeSplit$' -fuzztime=10m
//	go test ./fuzz -run='^$' -fuzz='^FuzzReader$' -fuzztime=10m
//	go test ./fuzz -run='^$' -fuzz='^FuzzRoundTrip$' -fuzztime=10m
//
// The go tool spends up to a minute minimizing each new interesting input.
// The exec count stands still meanwhile. The larger seeds make that slow
// (1,024 keys, a 66 KB frame). Add -fuzzminimizetime=5s to keep fuzzing.
//
// The targets:
//
//   - FuzzDecode: the slice Decoder never panics. It agrees with a plain
//     reference decoder written from the spec (reference_test.go).
//     A decoded message re-encodes, and decodes again, to the same message.
//     That holds byte for byte when type came first without a trailing LF.
//     The bytes consumed are exactly the header and the announced length.
//   - FuzzDecodeSplit: a stream cut at a fuzzed point is fed in two Decode
//     calls, as a server accumulates reads. It gives what the whole gives.
//   - FuzzReader: wire.Reader reads the input in fuzzed chunk sizes.
//     It never panics and agrees with the slice Decoder. It never allocates
//     in proportion to an announced length that never arrives.
//   - FuzzRoundTrip: a message built from fuzzed keys and values encodes
//     exactly when it is valid. It then decodes to itself.
//
// More targets live beside the code they exercise, because they use its
// internals.
//
//   - FuzzCore_Messages in maincontrol/core feeds message sequences into the core.
//   - FuzzDecodeRecord in maincontrol/core decodes change records.
//   - FuzzOpen in snapshot opens data dirs of any content.
//   - FuzzServer_Stream in maincontrol sends any bytes, in two writes, to a
//     real main control over loopback. Every answer decodes within
//     max_frame. A closing error is followed by the close. A new client is
//     served after.
//
// .ci/run smoke-fuzzes every target of every package.
//
// The go tool writes failing inputs to testdata/fuzz/<target>/. Commit the
// ones that exposed a bug, as regression seeds. TestGenCorpus generates
// the seed corpus:
//
//	go test ./fuzz -run='^TestGenCorpus$' -gencorpus
package fuzz
