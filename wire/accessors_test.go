package wire_test

import (
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/wire"
)

func TestParseUint(t *testing.T) {
	tests := []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"0", 0, true},
		{"1", 1, true},
		{"10", 10, true},
		{"30000", 30000, true},
		{"18446744073709551615", math.MaxUint64, true},
		{"18446744073709551616", 0, false}, // MaxUint64 + 1
		{"18446744073709551620", 0, false},
		{"99999999999999999999", 0, false},
		{"100000000000000000000", 0, false}, // 21 digits
		{"00", 0, false},
		{"01", 0, false},
		{"007", 0, false},
		{"-1", 0, false},
		{"-0", 0, false},
		{"+1", 0, false},
		{"", 0, false},
		{" 1", 0, false},
		{"1 ", 0, false},
		{"1a", 0, false},
		{"0x10", 0, false},
		{"1e3", 0, false},
		{"1.0", 0, false},
		{"١", 0, false},                                    // ARABIC-INDIC DIGIT ONE
		{"9999999999999999999", 9999999999999999999, true}, // 19 digits: the unchecked path
		{"1000000000000000000", 1e18, true},
		{"999999999999999999/", 0, false}, // the bytes either side of the digits
		{"99999999999999999:", 0, false},
		{"12345678901234567890", 12345678901234567890, true}, // 20 digits: the checked path
		{"1234567890123456789/", 0, false},
	}
	for _, tt := range tests {
		t.Run(strconv.Quote(tt.in), func(t *testing.T) {
			got, ok := wire.ParseUint(tt.in)
			assert.Equal(t, tt.ok, ok)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestParseInt(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true},
		{"-0", 0, true},
		{"1", 1, true},
		{"-1", -1, true},
		{"-42", -42, true},
		{"9223372036854775807", math.MaxInt64, true},
		{"9223372036854775808", 0, false},
		{"-9223372036854775808", math.MinInt64, true},
		{"-9223372036854775809", 0, false},
		{"-18446744073709551615", 0, false},
		{"+1", 0, false},
		{"-", 0, false},
		{"--1", 0, false},
		{"-+1", 0, false},
		{"-01", 0, false},
		{"01", 0, false},
		{"", 0, false},
		{" -1", 0, false},
		{"- 1", 0, false},
	}
	for _, tt := range tests {
		t.Run(strconv.Quote(tt.in), func(t *testing.T) {
			got, ok := wire.ParseInt(tt.in)
			assert.Equal(t, tt.ok, ok)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestParseBool(t *testing.T) {
	tests := []struct {
		in       string
		want, ok bool
	}{
		{"true", true, true},
		{"false", false, true},
		{"True", false, false},
		{"TRUE", false, false},
		{"1", false, false},
		{"0", false, false},
		{"yes", false, false},
		{"", false, false},
		{"true ", false, false},
	}
	for _, tt := range tests {
		t.Run(strconv.Quote(tt.in), func(t *testing.T) {
			got, ok := wire.ParseBool(tt.in)
			assert.Equal(t, tt.ok, ok)
			assert.Equal(t, tt.want, got)
		})
	}
}

// listCases is the list syntax: comma-separated, no spaces, no empty items;
// an empty value is the empty list.
var listCases = []struct {
	in   string
	want []string // nil with ok: the empty list
	ok   bool
}{
	{"", nil, true},
	{"a", []string{"a"}, true},
	{"a,b,c", []string{"a", "b", "c"}, true},
	{"12.3,12.4", []string{"12.3", "12.4"}, true},
	{"a,,b", nil, false},
	{"a,", nil, false},
	{",a", nil, false},
	{",", nil, false},
	{",,", nil, false},
	{"a, b", nil, false},
	{" a", nil, false},
	{"a ", nil, false},
	{" ", nil, false},
}

func TestSplitList(t *testing.T) {
	for _, tt := range listCases {
		t.Run(strconv.Quote(tt.in), func(t *testing.T) {
			got, ok := wire.SplitList(tt.in)
			assert.Equal(t, tt.ok, ok)
			if tt.ok {
				assert.Equal(t, len(tt.want), len(got))
				assert.Equal(t, tt.want, nilIfEmpty(got))
			}
		})
	}
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

func TestForEachItem(t *testing.T) {
	for _, tt := range listCases {
		t.Run(strconv.Quote(tt.in), func(t *testing.T) {
			var got []string
			ok := wire.ForEachItem(tt.in, func(it string) bool {
				got = append(got, it)
				return true
			})
			assert.Equal(t, tt.ok, ok)
			if tt.ok {
				assert.Equal(t, tt.want, got)
			}
		})
	}
	t.Run("stop early", func(t *testing.T) {
		var got []string
		ok := wire.ForEachItem("a,b,c", func(it string) bool {
			got = append(got, it)
			return it != "b"
		})
		assert.True(t, ok, "stopping early is not a syntax error")
		assert.Equal(t, []string{"a", "b"}, got)
	})
	t.Run("no allocation", func(t *testing.T) {
		n := 0
		allocs := testing.AllocsPerRun(100, func() {
			wire.ForEachItem("1.0,2.0,3.1", func(string) bool { n++; return true })
		})
		assert.Zero(t, allocs)
	})
}

// requireValueError asserts err is a *ValueError naming key, distinct from
// the framing errors.
func requireValueError(tb testing.TB, err error, key string) *wire.ValueError {
	tb.Helper()
	var ve *wire.ValueError
	require.ErrorAs(tb, err, &ve)
	assert.Equal(tb, key, ve.Key)
	assert.True(tb, strings.HasPrefix(err.Error(), key+": "), "error text %q names the key", err.Error())
	assert.NotErrorIs(tb, err, wire.ErrMalformed)
	assert.NotErrorIs(tb, err, wire.ErrFrameTooLarge)
	return ve
}

// accessorMessage holds one value of each kind, good and bad.
func accessorMessage() *wire.Message {
	return msg(
		"type", "t",
		"n", "42",
		"n_bad", "042",
		"n_max", "18446744073709551615",
		"n_over", "18446744073709551616",
		"i", "-9223372036854775808",
		"i_bad", "+1",
		"i_over", "-9223372036854775809",
		"b", "true",
		"b_bad", "yes",
		"timeout_ms", "1500",
		"max_ms", strconv.FormatInt(math.MaxInt64/int64(time.Millisecond), 10),
		"over_ms", strconv.FormatInt(math.MaxInt64/int64(time.Millisecond)+1, 10),
		"bad_ms", "1.5",
		"running", "1.0,2.3",
		"empty", "",
		"l_bad", "a,,b",
		"long", strings.Repeat("9", 100),
	)
}

func TestMessage_Uint(t *testing.T) {
	m := accessorMessage()
	tests := []struct {
		key  string
		want uint64
		ok   bool
	}{
		{"n", 42, true},
		{"n_max", math.MaxUint64, true},
		{"n_bad", 0, false},
		{"n_over", 0, false},
		{"b", 0, false},
		{"empty", 0, false},
		{"missing", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			got, err := m.Uint(tt.key)
			if !tt.ok {
				requireValueError(t, err, tt.key)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
	t.Run("long bad value is clipped in the message", func(t *testing.T) {
		m := msg("type", "t", "long", "x"+strings.Repeat("9", 100))
		_, err := m.Uint("long")
		requireValueError(t, err, "long")
		assert.Less(t, len(err.Error()), 150)
	})
}

func TestMessage_UintOr(t *testing.T) {
	m := accessorMessage()
	got, err := m.UintOr("missing", 7)
	require.NoError(t, err)
	assert.Equal(t, uint64(7), got)

	got, err = m.UintOr("n", 7)
	require.NoError(t, err)
	assert.Equal(t, uint64(42), got)

	_, err = m.UintOr("n_bad", 7)
	requireValueError(t, err, "n_bad")
}

func TestMessage_Int(t *testing.T) {
	m := accessorMessage()
	m.Set("neg_zero", "-0").Set("pos", "17")
	tests := []struct {
		key  string
		want int64
		ok   bool
	}{
		{"i", math.MinInt64, true},
		{"neg_zero", 0, true},
		{"pos", 17, true},
		{"i_bad", 0, false},
		{"i_over", 0, false},
		{"n_max", 0, false},
		{"empty", 0, false},
		{"missing", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			got, err := m.Int(tt.key)
			if !tt.ok {
				requireValueError(t, err, tt.key)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestMessage_Bool(t *testing.T) {
	m := accessorMessage()
	got, err := m.Bool("b")
	require.NoError(t, err)
	assert.True(t, got)

	_, err = m.Bool("b_bad")
	requireValueError(t, err, "b_bad")
	_, err = m.Bool("missing")
	requireValueError(t, err, "missing")
	_, err = m.Bool("empty")
	requireValueError(t, err, "empty")

	got, err = m.BoolOr("missing", true)
	require.NoError(t, err)
	assert.True(t, got)
	got, err = m.BoolOr("b", false)
	require.NoError(t, err)
	assert.True(t, got)
	_, err = m.BoolOr("b_bad", true)
	requireValueError(t, err, "b_bad")
}

func TestMessage_Duration(t *testing.T) {
	m := accessorMessage()
	tests := []struct {
		key  string
		want time.Duration
		ok   bool
	}{
		{"timeout_ms", 1500 * time.Millisecond, true},
		{"max_ms", time.Duration(math.MaxInt64/int64(time.Millisecond)) * time.Millisecond, true},
		{"over_ms", 0, false},
		{"n_max", 0, false},
		{"bad_ms", 0, false},
		{"empty", 0, false},
		{"missing", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			got, err := m.Duration(tt.key)
			if !tt.ok {
				requireValueError(t, err, tt.key)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
	t.Run("Or", func(t *testing.T) {
		got, err := m.DurationOr("missing", time.Second)
		require.NoError(t, err)
		assert.Equal(t, time.Second, got)
		got, err = m.DurationOr("timeout_ms", time.Second)
		require.NoError(t, err)
		assert.Equal(t, 1500*time.Millisecond, got)
		_, err = m.DurationOr("bad_ms", time.Second)
		requireValueError(t, err, "bad_ms")
	})
}

func TestMessage_List(t *testing.T) {
	m := accessorMessage()
	got, err := m.List("running")
	require.NoError(t, err)
	assert.Equal(t, []string{"1.0", "2.3"}, got)

	got, err = m.List("empty")
	require.NoError(t, err)
	assert.Empty(t, got, "an empty value is the empty list")

	got, err = m.List("missing")
	require.NoError(t, err)
	assert.Empty(t, got, "an absent list key is the empty list")

	_, err = m.List("l_bad")
	requireValueError(t, err, "l_bad")
}
