package pipeline_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/pipeline"
)

const ingest = `
name: ingest
vars: {day: today}
key: ingest-${day}
steps:
  - id: fetch
    type: exec
    args: {argv: "fetch ${day}"}
    compensate: {type: cleanup, args: {path: "${steps.fetch.out.path}"}}
  - id: parse
    type: exec
    depends_on: [fetch]
    args: {argv: "parse ${steps.fetch.out.path} on ${day}", cost: "$$5"}
    compensate: {args: {what: "${steps.parse.out.rows} rows of ${steps.fetch.out.path}"}}
  - id: notify
    type: echo
    depends_on: [parse]
    optional: true
    args: {msg: "$${steps.fetch.out.path} is literal; ${steps.fetch.out.path} is not"}
  - id: alert
    type: echo
    depends_on: [parse]
    when: failed
`

func TestParse_StepSemantics(t *testing.T) {
	p, err := pipeline.Parse(strings.NewReader(ingest), map[string]string{"day": "d1"})
	require.NoError(t, err)
	require.Len(t, p.Steps, 4)
	fetch, parse, notify, alert := p.Steps[0], p.Steps[1], p.Steps[2], p.Steps[3]

	require.NotNil(t, fetch.Compensate)
	assert.Equal(t, "cleanup", fetch.Compensate.Type)
	assert.Equal(t, []pipeline.Ref{{Arg: "path", Step: "fetch", Out: "path"}}, fetch.Compensate.Refs, "a compensate reads its own step")

	assert.Equal(t, "parse ${steps.fetch.out.path} on d1", parse.Args["argv"], "variables filled in, references left alone")
	assert.Equal(t, "$5", parse.Args["cost"])
	assert.Equal(t, []pipeline.Ref{{Arg: "argv", Step: "fetch", Out: "path"}}, parse.Refs)
	require.NotNil(t, parse.Compensate)
	assert.Equal(t, "exec", parse.Compensate.Type, "the step's own type by default")
	assert.Len(t, parse.Compensate.Refs, 2)

	assert.True(t, notify.Optional)
	assert.Equal(t, []pipeline.Ref{{Arg: "msg", Step: "fetch", Out: "path"}}, notify.Refs, "$${ is a literal, not a reference")
	assert.Equal(t, "${steps.fetch.out.path} is literal; ${steps.fetch.out.path} is not", notify.Args["msg"])
	assert.False(t, fetch.Optional)

	assert.Equal(t, "failed", alert.When)
	assert.Empty(t, fetch.When)

	assert.ElementsMatch(t, []string{"optional steps", "when: failed", "compensate", "step outputs (${steps.<id>.out.<key>})"}, p.RunOnly())

	var b bytes.Buffer
	p.Describe(&b)
	out := b.String()
	for _, want := range []string{
		"  1. fetch  type=exec  key=ingest-d1/fetch\n       arg.argv=fetch d1\n       compensate type=cleanup\n         arg.path=${steps.fetch.out.path}\n",
		"  3. notify  type=echo  after=parse  key=ingest-d1/notify  optional\n",
		"  4. alert  type=echo  after=parse  key=ingest-d1/alert  when=failed\n",
	} {
		assert.Contains(t, out, want)
	}
}

// A plain pipeline needs nothing of runs: it still runs on an older
// main control, step by step.
func TestParse_PlainNeedsNoRuns(t *testing.T) {
	p, err := pipeline.Parse(strings.NewReader(nightly), nil)
	require.NoError(t, err)
	assert.Empty(t, p.RunOnly())
}

// Names of the form steps.* are references, never variables: a --var
// cannot fill one in, and the unknown --var error does not list them.
func TestParse_ReferencesAreNotVariables(t *testing.T) {
	const f = "name: x\nsteps:\n  - {id: a, type: echo}\n  - {id: b, type: echo, depends_on: [a], args: {p: '${steps.a.out.p}'}}\n"
	p, err := pipeline.Parse(strings.NewReader(f), nil)
	require.NoError(t, err)
	assert.Equal(t, "${steps.a.out.p}", p.Steps[1].Args["p"])
	_, err = pipeline.Parse(strings.NewReader(f), map[string]string{"steps.a.out.p": "x"})
	var uv *pipeline.UnknownVarError
	require.ErrorAs(t, err, &uv)
	assert.Empty(t, uv.Known)
}

func TestParse_StepSemanticsErrors(t *testing.T) {
	tests := []struct{ name, yaml, want string }{
		{"unknown step", "name: x\nsteps:\n  - {id: a, type: echo, args: {p: '${steps.zz.out.p}'}}",
			`step 1 (line 3) "a": args.p: ${steps.zz.out.p} names unknown step "zz"`},
		{"not a dependency", "name: x\nsteps:\n  - {id: a, type: echo}\n  - {id: b, type: echo, args: {p: 'at ${steps.a.out.p}'}}",
			`step 2 (line 4) "b": args.p: ${steps.a.out.p} reads step "a", which "b" does not depend on (directly or through other steps): add it to depends_on`},
		{"a dependent, not a dependency", "name: x\nsteps:\n  - {id: a, type: echo, args: {p: '${steps.b.out.p}'}}\n  - {id: b, type: echo, depends_on: [a]}",
			`step 1 (line 3) "a": args.p: ${steps.b.out.p} reads step "b", which "a" does not depend on`},
		{"own output", "name: x\nsteps:\n  - {id: a, type: echo, args: {p: '${steps.a.out.p}'}}",
			`step 1 (line 3) "a": args.p: ${steps.a.out.p} reads the step's own output: only its compensate can`},
		{"compensate reads a later step", "name: x\nsteps:\n  - {id: a, type: echo, compensate: {args: {p: '${steps.b.out.p}'}}}\n  - {id: b, type: echo, depends_on: [a]}",
			`step 1 (line 3) "a": compensate.args.p: ${steps.b.out.p} reads step "b"`},
		{"malformed reference", "name: x\nsteps:\n  - {id: a, type: echo, args: {p: '${steps.a.p}'}}",
			`step 1 (line 3) "a": args.p: ${steps.a.p} is not an output reference: write ${steps.<step id>.out.<key>}`},
		{"bad output key", "name: x\nsteps:\n  - {id: a, type: echo}\n  - {id: b, type: echo, depends_on: [a], args: {p: '${steps.a.out.P}'}}",
			`${steps.a.out.P} is not an output reference`},
		{"reference outside args", "name: x\nsteps:\n  - {id: a, type: '${steps.b.out.t}'}",
			`type: ${steps.b.out.t}: a step's outputs may be read only in args`},
		{"bad optional", "name: x\nsteps:\n  - {id: a, type: echo, optional: maybe}",
			`step 1 (line 3) "a": optional must be true or false (got "maybe")`},
		{"bad when", "name: x\nsteps:\n  - {id: a, type: echo}\n  - {id: b, type: echo, depends_on: [a], when: succeeded}",
			`step 2 (line 4) "b": when must be failed, or left out (got "succeeded")`},
		{"when without dependencies", "name: x\nsteps:\n  - {id: a, type: echo, when: failed}",
			`step 1 (line 3) "a": when: failed needs depends_on`},
		{"compensate with an unknown field", "name: x\nsteps:\n  - {id: a, type: echo, compensate: {kind: x}}",
			"field kind not found"},
		{"compensate arg name", "name: x\nsteps:\n  - {id: a, type: echo, compensate: {args: {Big: 1}}}",
			`compensate.args: name "Big"`},
		{"compensate with a missing var", "name: x\nsteps:\n  - {id: a, type: echo, compensate: {type: '${t}'}}",
			"compensate.type: undefined variable ${t}"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := pipeline.Parse(strings.NewReader(tc.yaml), nil)
			require.Error(t, err)
			assert.ErrorIs(t, err, pipeline.ErrInvalid)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// A reference through another step is fine: c reads a, which it depends
// on through b.
func TestParse_ReferenceThroughADependency(t *testing.T) {
	_, err := pipeline.Parse(strings.NewReader(`
name: x
steps:
  - {id: a, type: echo}
  - {id: b, type: echo, depends_on: [a]}
  - {id: c, type: echo, depends_on: [b], args: {p: "${steps.a.out.p}"}, optional: "${opt}"}
vars: {opt: "true"}
`), nil)
	require.NoError(t, err)
}
