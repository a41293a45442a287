package pipeline_test

import (
	"errors"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/pipeline"
)

const nightly = `
name: nightly-report
vars: {date: today}
key: nightly-${date}
defaults: {max_attempts: 2, timeout: 1m}
steps:
  - id: fetch
    type: exec
    args: {argv: "/usr/local/bin/fetch --date ${date}", n: 3}
    max_attempts: 3
    timeout: 10m
  - id: store
    type: echo
    depends_on: [clean]
    priority: 7
  - id: clean
    type: echo
    depends_on: [fetch, fetch]
`

func TestParse_Nightly(t *testing.T) {
	p, err := pipeline.Parse(strings.NewReader(nightly), map[string]string{"date": "2026-11-29"})
	require.NoError(t, err)
	assert.Equal(t, "nightly-report", p.Name)
	var ids []string
	for _, s := range p.Steps {
		ids = append(ids, s.ID)
	}
	assert.Equal(t, []string{"fetch", "clean", "store"}, ids, "each step after what it depends on")
	fetch := p.Steps[0]
	assert.Equal(t, "/usr/local/bin/fetch --date 2026-11-29", fetch.Args["argv"], "--var overrides vars")
	assert.Equal(t, "3", fetch.Args["n"])
	assert.Equal(t, 3, fetch.MaxAttempts)
	assert.Equal(t, 10*time.Minute, fetch.Timeout)
	assert.Equal(t, "nightly-2026-11-29/fetch", fetch.Key)
	clean := p.Steps[1]
	assert.Equal(t, []string{"fetch"}, clean.DependsOn, "duplicates count once")
	assert.Equal(t, 2, clean.MaxAttempts, "defaults apply")
	assert.Equal(t, time.Minute, clean.Timeout)
	assert.Equal(t, 7, p.Steps[2].Priority)
	assert.Equal(t, []string{"fetch", "clean", "store"}, p.Longest)
}

func TestParse_Errors(t *testing.T) {
	tests := []struct {
		name, yaml, want string
		vars             map[string]string
	}{
		{"empty", ``, "empty file", nil},
		{"no name", "steps: [{id: a, type: echo}]", "name is required", nil},
		{"no steps", "name: x", "no steps", nil},
		{"unknown field", "name: x\nstepz: []", "field stepz not found", nil},
		{"unknown step field", "name: x\nsteps: [{id: a, type: echo, retries: 3}]", "field retries not found", nil},
		{"unknown dependency", "name: x\nsteps:\n\n  - id: a\n    type: echo\n    depends_on: [b]", `step 1 (line 4): step "a" depends on unknown step "b"`, nil},
		{"self", "name: x\nsteps: [{id: a, type: echo, depends_on: [a]}]", "depends on itself", nil},
		{"duplicate id", "name: x\nsteps:\n  - {id: a, type: echo}\n  - {id: a, type: echo}", `step 2 (line 4): step id "a" used twice (first by step 1 (line 3))`, nil},
		{"bad id", "name: x\nsteps: [{id: 'a b', type: echo}]", "id must be", nil},
		{"no type", "name: x\nsteps: [{id: a}]", "type is required", nil},
		{"bad arg name", "name: x\nsteps: [{id: a, type: echo, args: {Big: 1}}]", `name "Big"`, nil},
		{"missing var", "name: x\nsteps: [{id: a, type: echo, args: {d: '${date}'}}]", "undefined variable ${date} (give it with --var date=...)", nil},
		{"unclosed var", "name: x\nsteps: [{id: a, type: echo, args: {d: '${date'}}]", "unclosed ${", nil},
		{"bad timeout", "name: x\nsteps: [{id: a, type: echo, timeout: soon}]", `timeout: "soon" is not a duration`, nil},
		{"bad priority", "name: x\nsteps: [{id: a, type: echo, priority: 10}]", "priority must be 0 to 9", nil},
		{"bad attempts", "name: x\nsteps: [{id: a, type: echo, max_attempts: 0}]", "max_attempts must be at least 1", nil},
		{"attempts not a number", "name: x\nsteps: [{id: a, type: echo, max_attempts: 2.5}]", `max_attempts must be at least 1 (got "2.5")`, nil},
		{"attempts from a bad var", "name: x\nsteps: [{id: a, type: echo, max_attempts: '${n}'}]", `max_attempts must be at least 1 (got "many")`, map[string]string{"n": "many"}},
		{"priority from a missing var", "name: x\nsteps: [{id: a, type: echo, priority: '${p}'}]", "priority: undefined variable ${p}", nil},
		{"missing var in name", "name: n-${nope}\nsteps: [{id: a, type: echo}]", "name: undefined variable ${nope}", nil},
		{"name with a path", "name: ../x\nsteps: [{id: a, type: echo}]", `name "../x" must be`, nil},
		{"name from a var with a path", "name: '${n}'\nsteps: [{id: a, type: echo}]", `name "a/b" must be`, map[string]string{"n": "a/b"}},
		{"missing var in id", "name: x\nsteps: [{id: '${s}', type: echo}]", "id: undefined variable ${s}", nil},
		{"missing var in depends_on", "name: x\nsteps: [{id: a, type: echo, depends_on: ['${s}']}]", "depends_on: undefined variable ${s}", nil},
		{"error names the filled-in id", "name: x\nsteps: [{id: '${s}', type: echo, priority: 10}]", `step 1 (line 2) "fetch": priority`, map[string]string{"s": "fetch"}},
		{"self through a var", "name: x\nsteps: [{id: a, type: echo, depends_on: ['${s}']}]", "depends on itself (dependency cycle: a -> a)", map[string]string{"s": "a"}},
		{"empty step", "name: x\nsteps:\n  -\n  - {id: a, type: echo}\n", "line 3: empty step", nil},
		{"two documents", "name: x\nsteps: [{id: a, type: echo}]\n---\nname: y\n", "more than one YAML document", nil},
		{"first bad arg name in order", "name: x\nsteps: [{id: a, type: echo, args: {Zed: 1, Abc: 2}}]", `name "Abc"`, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := pipeline.Parse(strings.NewReader(tc.yaml), tc.vars)
			require.Error(t, err)
			assert.ErrorIs(t, err, pipeline.ErrInvalid)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestParse_CycleWithPath(t *testing.T) {
	_, err := pipeline.Parse(strings.NewReader(`
name: loop
steps:
  - {id: a, type: echo}
  - {id: b, type: echo, depends_on: [a, d]}
  - {id: c, type: echo, depends_on: [b]}
  - {id: d, type: echo, depends_on: [c]}
`), nil)
	var ce *pipeline.CycleError
	require.True(t, errors.As(err, &ce), "%v", err)
	// Run order, as the longest chain is printed: b before c before d
	// before b (d depends on c, c on b, b on d).
	assert.Equal(t, []string{"b", "c", "d", "b"}, ce.Path)
	assert.Equal(t, "invalid pipeline: dependency cycle: b -> c -> d -> b", err.Error())
	assert.ErrorIs(t, err, pipeline.ErrInvalid)
}

func TestParse_DiamondAndTemplates(t *testing.T) {
	p, err := pipeline.Parse(strings.NewReader(`
name: diamond
steps:
  - {id: join, type: echo, depends_on: [left, right]}
  - {id: right, type: echo, depends_on: [top]}
  - {id: left, type: echo, depends_on: [top], args: {price: "$$5 ${who}"}}
  - {id: top, type: '${kind}'}
`), map[string]string{"who": "me", "kind": "echo"})
	require.NoError(t, err)
	var ids []string
	for _, s := range p.Steps {
		ids = append(ids, s.ID)
	}
	assert.Equal(t, []string{"top", "right", "left", "join"}, ids)
	assert.Equal(t, "$5 me", p.Steps[2].Args["price"])
	assert.Equal(t, "echo", p.Steps[0].Type)
	assert.Len(t, p.Longest, 3)
	var b strings.Builder
	p.Describe(&b)
	assert.Contains(t, b.String(), "pipeline diamond: 4 steps, longest chain 3")
	assert.Contains(t, b.String(), "  4. join  type=echo  after=left,right\n")
	assert.Contains(t, b.String(), "arg.price=$5 me")
}

// A ${var} may stand for any value of the file, not only args: the name,
// ids, dependencies, numbers and durations.
func TestParse_TemplatesEverywhere(t *testing.T) {
	p, err := pipeline.Parse(strings.NewReader(`
name: report-${date}
defaults: {timeout: '${to}'}
steps:
  - {id: '${first}', type: echo, max_attempts: '${n}', priority: '${p}', delay: '${d}'}
  - {id: second, type: echo, depends_on: ['${first}']}
`), map[string]string{"date": "d1", "to": "90s", "first": "fetch", "n": "4", "p": "8", "d": "2s"})
	require.NoError(t, err)
	assert.Equal(t, "report-d1", p.Name)
	require.Len(t, p.Steps, 2)
	first, second := p.Steps[0], p.Steps[1]
	assert.Equal(t, "fetch", first.ID)
	assert.Equal(t, 4, first.MaxAttempts)
	assert.Equal(t, 8, first.Priority)
	assert.Equal(t, 2*time.Second, first.Delay)
	assert.Equal(t, 90*time.Second, first.Timeout, "defaults expand too")
	assert.Equal(t, []string{"fetch"}, second.DependsOn)
	assert.Equal(t, 90*time.Second, second.Timeout)
}

// A --var the file neither declares nor uses is refused, naming what the
// file knows: a typo (data for date) ran the file with its default.
func TestParse_UnknownVars(t *testing.T) {
	const everywhere = `
name: r-${name}
key: k-${key}
vars: {declared: x}
defaults: {max_attempts: '${dma}', timeout: '${dto}', delay: '${dde}', priority: '${dpr}'}
steps:
  - {id: '${id}', type: '${type}', args: {a: '${arg}', b: "$${literal}"}}
  - {id: b, type: echo, depends_on: ['${dep}'], max_attempts: '${ma}', timeout: '${to}', delay: '${de}', priority: '${pr}'}
`
	used := map[string]string{"name": "n", "key": "k", "dma": "2", "dto": "1s", "dde": "1s", "dpr": "1",
		"id": "a", "type": "echo", "arg": "v", "dep": "a", "ma": "3", "to": "2s", "de": "2s", "pr": "2"}
	known := "its variables: arg, dde, de, declared, dep, dma, dpr, dto, id, key, ma, name, pr, to, type"
	tests := []struct {
		name  string
		extra map[string]string
		want  string // "": accepted
	}{
		{name: "every template and a declared var", extra: map[string]string{"declared": "y"}},
		{name: "one unknown", extra: map[string]string{"bogus": "1"},
			want: "unknown --var bogus: the file neither declares it in vars nor uses ${bogus} (" + known + ")"},
		{name: "two unknown", extra: map[string]string{"zz": "1", "aa": "2"},
			want: "unknown --var aa, zz: the file neither declares them in vars nor uses them (" + known + ")"},
		{name: "an escaped $${literal} is no use", extra: map[string]string{"literal": "1"},
			want: "unknown --var literal:"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			vars := map[string]string{}
			maps.Copy(vars, used)
			maps.Copy(vars, tc.extra)
			_, err := pipeline.Parse(strings.NewReader(everywhere), vars)
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			var uv *pipeline.UnknownVarError
			assert.ErrorAs(t, err, &uv)
		})
	}
	_, err := pipeline.Parse(strings.NewReader("name: p\nsteps: [{id: a, type: echo}]\n"), map[string]string{"date": "d"})
	assert.EqualError(t, err, "unknown --var date: the file neither declares it in vars nor uses ${date} (it has none)")
}

// A broken template is reported as what it is, not as an unknown --var
// whose reference the scan could not read.
func TestParse_BrokenTemplateBeforeUnknownVar(t *testing.T) {
	_, err := pipeline.Parse(strings.NewReader("name: n\nsteps:\n  - {id: a, type: echo, args: {v: \"${x\"}}\n"),
		map[string]string{"x": "1"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "${")
	assert.NotContains(t, err.Error(), "unknown --var")
}
