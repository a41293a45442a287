package wire

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// ParseUint parses a spec number within uint64. That is decimal ASCII
// with no sign, and no leading zero unless the number is "0".
func ParseUint(s string) (uint64, bool) {
	if len(s) == 0 || len(s) > 20 || (len(s) > 1 && s[0] == '0') {
		return 0, false
	}
	var n uint64
	if len(s) < 20 { // at most 19 digits: no overflow to check for
		for i := 0; i < len(s); i++ {
			d := s[i] - '0'
			if d > 9 {
				return 0, false
			}
			n = n*10 + uint64(d)
		}
		return n, true
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if n > (math.MaxUint64-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, true
}

// ParseInt parses a spec signed integer within int64. It is a number,
// perhaps after a '-'.
func ParseInt(s string) (int64, bool) {
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	u, ok := ParseUint(s)
	if !ok {
		return 0, false
	}
	if neg {
		if u > 1<<63 {
			return 0, false
		}
		return -int64(u), true // -(1<<63) wraps to MinInt64, which is right
	}
	if u > math.MaxInt64 {
		return 0, false
	}
	return int64(u), true
}

// ParseBool parses "true" or "false".
func ParseBool(s string) (bool, bool) {
	switch s {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	return false, false
}

// SplitList splits a list value. An empty value is the empty list. An
// empty item, or an item with a space, breaks the list syntax.
func SplitList(s string) ([]string, bool) {
	if s == "" {
		return nil, true
	}
	items := strings.Split(s, ",")
	for _, it := range items {
		if it == "" || strings.IndexByte(it, ' ') >= 0 {
			return nil, false
		}
	}
	return items, true
}

// ForEachItem calls fn for each item of list value s without allocating.
// It returns false if the list syntax is broken. fn may stop early by
// returning false. ForEachItem still returns true then.
func ForEachItem(s string, fn func(item string) bool) bool {
	if s == "" {
		return true
	}
	for {
		i := strings.IndexByte(s, ',')
		item := s
		if i >= 0 {
			item = s[:i]
		}
		if item == "" || strings.IndexByte(item, ' ') >= 0 {
			return false
		}
		if !fn(item) {
			return true
		}
		if i < 0 {
			return true
		}
		s = s[i+1:]
	}
}

// MissingKey is the error for a required key that is absent. It serves
// callers that looked the message's fields up themselves.
func MissingKey(k string) error { return &ValueError{Key: k, Reason: "required key missing"} }

// Uint returns the required number at key k.
func (m *Message) Uint(k string) (uint64, error) {
	v, ok := m.Get(k)
	if !ok {
		return 0, MissingKey(k)
	}
	return UintValue(k, v)
}

// UintOr returns the number at key k, or def when k is absent.
func (m *Message) UintOr(k string, def uint64) (uint64, error) {
	v, ok := m.Get(k)
	if !ok {
		return def, nil
	}
	return UintValue(k, v)
}

// UintValue parses v, the value of key k, as a number. It serves callers
// that found the value themselves.
func UintValue(k, v string) (uint64, error) {
	n, ok := ParseUint(v)
	if !ok {
		return 0, &ValueError{Key: k, Reason: "not a number (decimal, no sign, no leading zeros, within uint64): " + strconv.Quote(clip(v))}
	}
	return n, nil
}

// Int returns the required signed integer at key k.
func (m *Message) Int(k string) (int64, error) {
	v, ok := m.Get(k)
	if !ok {
		return 0, MissingKey(k)
	}
	n, ok := ParseInt(v)
	if !ok {
		return 0, &ValueError{Key: k, Reason: "not a signed integer within int64: " + strconv.Quote(clip(v))}
	}
	return n, nil
}

// Bool returns the required boolean at key k.
func (m *Message) Bool(k string) (bool, error) {
	v, ok := m.Get(k)
	if !ok {
		return false, MissingKey(k)
	}
	return BoolValue(k, v)
}

// BoolOr returns the boolean at key k, or def when k is absent.
func (m *Message) BoolOr(k string, def bool) (bool, error) {
	v, ok := m.Get(k)
	if !ok {
		return def, nil
	}
	return BoolValue(k, v)
}

// BoolValue parses v, the value of key k, as a boolean.
func BoolValue(k, v string) (bool, error) {
	b, ok := ParseBool(v)
	if !ok {
		return false, &ValueError{Key: k, Reason: "not a boolean (true or false): " + strconv.Quote(clip(v))}
	}
	return b, nil
}

// maxMillis is the largest millisecond count a time.Duration holds.
const maxMillis = uint64(math.MaxInt64 / int64(time.Millisecond))

// Duration returns the required millisecond duration at key k (a `_ms` key).
func (m *Message) Duration(k string) (time.Duration, error) {
	v, ok := m.Get(k)
	if !ok {
		return 0, MissingKey(k)
	}
	return durationValue(k, v)
}

// DurationOr returns the millisecond duration at key k, or def when absent.
func (m *Message) DurationOr(k string, def time.Duration) (time.Duration, error) {
	v, ok := m.Get(k)
	if !ok {
		return def, nil
	}
	return durationValue(k, v)
}

func durationValue(k, v string) (time.Duration, error) {
	n, err := UintValue(k, v)
	if err != nil {
		return 0, err
	}
	if n > maxMillis {
		return 0, &ValueError{Key: k, Reason: "duration too large"}
	}
	return time.Duration(n) * time.Millisecond, nil
}

// List returns the list at key k. An absent key is the empty list.
func (m *Message) List(k string) ([]string, error) {
	v, _ := m.Get(k)
	items, ok := SplitList(v)
	if !ok {
		return nil, &ValueError{Key: k, Reason: "bad list (comma-separated, no empty items, no spaces)"}
	}
	return items, nil
}

// clip bounds a value quoted in an error message.
func clip(v string) string {
	if len(v) > 32 {
		return v[:32] + "..."
	}
	return v
}
