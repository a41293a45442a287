package wire

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestArgs_FormatParse(t *testing.T) {
	args := []Arg{{Name: "path", Kind: ArgString, Required: true}, {Name: "env.*", Kind: ArgString}, {Name: "n", Kind: ArgInt}}
	s := FormatArgs(args)
	assert.Equal(t, "path:string:required,env.*:string,n:int", s)
	back, err := ParseArgs(s)
	require.NoError(t, err)
	assert.Equal(t, args, back)
	for _, bad := range []string{"x", "x:int:opt", "x:number", "X:int", "a,,b", "x:int:required:more", "a*b:int"} {
		_, err := ParseArgs(bad)
		assert.Error(t, err, bad)
	}
}

func TestCheckArgs(t *testing.T) {
	schema := []Arg{{Name: "path", Kind: ArgString, Required: true}, {Name: "n", Kind: ArgInt},
		{Name: "on", Kind: ArgBool}, {Name: "wait", Kind: ArgDuration}, {Name: "meta", Kind: ArgJSON},
		{Name: "f", Kind: ArgFloat}, {Name: "env.*", Kind: ArgString}, {Name: "env.n*", Kind: ArgInt}}
	assert.Empty(t, CheckArgs(schema, map[string]string{"path": "/x", "n": "-3", "on": "true", "wait": "5s",
		"meta": `{"a":1}`, "f": "1.5", "env.home": "h", "env.nproc": "4"}))
	probs := CheckArgs(schema, map[string]string{"n": "x", "on": "yes", "wait": "5", "meta": "{", "f": "one",
		"env.nproc": "four", "other": "1"})
	var got []string
	for _, p := range probs {
		got = append(got, p.String())
	}
	assert.Equal(t, []string{
		"arg path: required, missing",
		`arg env.nproc: want int: "four": invalid syntax`,
		`arg f: want float: "one": invalid syntax`,
		"arg meta: want json: not one JSON value",
		`arg n: want int: "x": invalid syntax`,
		`arg on: want bool: "yes" is not true or false`,
		"arg other: not in the handler's schema",
		`arg wait: want duration: time: missing unit in duration "5"`,
	}, got)
	assert.True(t, probs[6].Unknown)
	assert.Empty(t, CheckArgs(nil, map[string]string{"any": "thing"}), "no schema, no problem")
	assert.False(t, RuntimeChecks([]Arg{{Name: "*", Kind: ArgString}}))
	assert.True(t, RuntimeChecks(schema))
}

func TestDescriptions_RoundTrip(t *testing.T) {
	b := Begin(nil, KindRegister)
	d := Description{Type: "resize", Name: "resizer", Version: "1", Args: []Arg{{Name: "w", Kind: ArgInt}}, TimeoutMs: 5}
	AppendDescription(&b, 0, d)
	AppendDescription(&b, 1, Description{Type: "x"})
	frame, err := b.Finish()
	require.NoError(t, err)
	m, _, err := NewDecoder(0).Decode(frame)
	require.NoError(t, err)
	got, err := ParseDescriptions(m)
	require.NoError(t, err)
	assert.Equal(t, []Description{d, {Type: "x"}}, got)
	assert.Equal(t, 5, DescriptionKeys(d))
}
