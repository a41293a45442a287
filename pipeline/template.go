package pipeline

import (
	"fmt"
	"strings"
)

// expand replaces ${name} with vars[name] and $$ with $. An undefined
// variable or an unclosed ${ is an error.
func expand(s string, vars map[string]string) (string, error) {
	if !strings.Contains(s, "$") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '$' {
			b.WriteByte(c)
			continue
		}
		switch {
		case i+1 < len(s) && s[i+1] == '$':
			b.WriteByte('$')
			i++
		case i+1 < len(s) && s[i+1] == '{':
			end := strings.IndexByte(s[i+2:], '}')
			if end < 0 {
				return "", fmt.Errorf("unclosed ${ in %q", s)
			}
			name := s[i+2 : i+2+end]
			v, ok := vars[name]
			if !ok {
				return "", fmt.Errorf("undefined variable ${%s} (give it with --var %s=...)", name, name)
			}
			b.WriteString(v)
			i += 2 + end
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}
