package wire

import (
	"math/bits"
	"strconv"
)

// digitPairs holds "00" to "99", so numbers are written two digits a step.
const digitPairs = "00010203040506070809" +
	"10111213141516171819" +
	"20212223242526272829" +
	"30313233343536373839" +
	"40414243444546474849" +
	"50515253545556575859" +
	"60616263646566676869" +
	"70717273747576777879" +
	"80818283848586878889" +
	"90919293949596979899"

// appendUint is strconv.AppendUint(dst, v, 10), written in place. Task
// frames carry six numbers, and most are one digit. So the main control's
// replies spend a visible share of their time here.
func appendUint(dst []byte, v uint64) []byte {
	if v < 10 && len(dst) < cap(dst) { // small enough to inline: most calls
		return append(dst, byte('0'+v))
	}
	return appendUintDigits(dst, v)
}

func appendUintDigits(dst []byte, v uint64) []byte {
	if v < 10 {
		return append(dst, byte('0'+v))
	}
	if v >= 1e19 {
		return strconv.AppendUint(dst, v, 10)
	}
	// This is log10 from log2. 1233/4096 is just above log10(2), so n is
	// the digit count or one less.
	n := bits.Len64(v) * 1233 >> 12
	if v >= pow10[n] {
		n++
	}
	start := len(dst)
	if cap(dst)-start < n {
		dst = append(dst, "0000000000000000000"[:n]...)
	} else {
		dst = dst[:start+n] // every byte is written below
	}
	out := dst[start:]
	i := n
	for v >= 100 {
		q := v / 100
		j := (v - q*100) * 2
		i -= 2
		out[i], out[i+1] = digitPairs[j], digitPairs[j+1]
		v = q
	}
	if v >= 10 {
		out[i-2], out[i-1] = digitPairs[v*2], digitPairs[v*2+1]
	} else {
		out[i-1] = byte('0' + v)
	}
	return dst
}

// pow10[i] is 10^i, up to the largest that fits in a uint64.
var pow10 = func() (t [20]uint64) {
	t[0] = 1
	for i := 1; i < len(t); i++ {
		t[i] = t[i-1] * 10
	}
	return t
}()
