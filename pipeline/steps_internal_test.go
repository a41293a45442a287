package pipeline

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The templates sent to the main control keep references and escape
// every other ${ as $${, so only the references are filled in.
func TestExpandArg_Template(t *testing.T) {
	vars := map[string]string{"home": "${HOME}", "d": "d1"}
	tests := []struct{ in, value, tmpl string }{
		{"plain ${d}", "plain d1", "plain d1"},
		{"${steps.a.out.p}/x", "${steps.a.out.p}/x", "${steps.a.out.p}/x"},
		{"$${steps.a.out.p} ${steps.a.out.p}", "${steps.a.out.p} ${steps.a.out.p}", "$${steps.a.out.p} ${steps.a.out.p}"},
		{"${home}:${steps.a.out.p}", "${HOME}:${steps.a.out.p}", "$${HOME}:${steps.a.out.p}"},
		{"cost $$5", "cost $5", "cost $5"},
	}
	for _, tc := range tests {
		v, tmpl, _, err := expandArg("k", tc.in, vars)
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.value, v, tc.in)
		assert.Equal(t, tc.tmpl, tmpl, tc.in)
	}
	_, _, _, err := expandArg("k", "$$${steps.a.out.p}", vars)
	assert.ErrorContains(t, err, "a $ right before ${steps.a.out.p} cannot be told from $${")
}
