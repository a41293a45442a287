package pipeline_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/apollo11/apollo11/pipeline"
	"github.com/apollo11/apollo11/wire"
)

// A dry run's args check: required args present, kinds parse, unknown
// args and undescribed types flagged as warnings; a value that refers to
// an earlier step's output counts as present and is not kind-checked.
func TestCheckArgs_AgainstDescriptions(t *testing.T) {
	p, err := pipeline.Parse(strings.NewReader(`
name: chk
steps:
  - {id: nap, type: sleep, args: {ms: "soon"}}
  - {id: nap2, type: sleep, args: {msec: "5"}}
  - {id: ok, type: sleep, args: {ms: "5"}}
  - {id: free, type: echo, args: {anything: "x"}}
  - {id: free2, type: echo}
  - {id: ref, type: sleep, depends_on: [ok], args: {ms: "${steps.ok.out.ms}"},
     compensate: {args: {ms: "never"}}}
`), nil)
	require.NoError(t, err)
	schemas := map[string][]wire.Arg{"sleep": {{Name: "ms", Kind: wire.ArgInt, Required: true}}}
	issues := pipeline.CheckArgs(p, schemas)
	var lines []string
	for _, i := range issues {
		lines = append(lines, i.String())
	}
	assert.Equal(t, []string{
		`error: step nap (sleep): arg ms: want int: "soon": invalid syntax`,
		"error: step nap2 (sleep): arg ms: required, missing",
		"warning: step nap2 (sleep): arg msec: not in the handler's schema",
		"warning: step free (echo): no connected executor describes this type's args: not checked",
	}, lines)
	assert.Equal(t, 2, pipeline.Errors(issues))
	assert.Empty(t, pipeline.CheckArgs(p, map[string][]wire.Arg{"sleep": {{Name: "*", Kind: wire.ArgString}},
		"echo": {{Name: "*", Kind: wire.ArgString}}}), "every step passes a looser schema")
}
