package builtin

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// argvOf reads the command line from a task's args. It takes arg.argv.0,
// arg.argv.1, ... when arg.argv.0 is present. Otherwise it splits arg.argv
// on ASCII white space.
func argvOf(args map[string]string) ([]string, error) {
	if _, ok := args["argv.0"]; ok {
		var argv []string
		for i := 0; ; i++ {
			v, ok := args["argv."+strconv.Itoa(i)]
			if !ok {
				break
			}
			argv = append(argv, v)
		}
		if n := countIndexed(args); n != len(argv) {
			return nil, fmt.Errorf("exec: arg.argv.N keys must run from argv.0 without gaps (found %d, consecutive %d)", n, len(argv))
		}
		return argv, nil
	}
	if line, ok := args["argv"]; ok {
		if argv := strings.FieldsFunc(line, asciiSpace); len(argv) > 0 {
			return argv, nil
		}
		return nil, errors.New("exec: arg.argv is empty")
	}
	return nil, errors.New("exec: no command: set arg.argv.0, arg.argv.1, ... or arg.argv")
}

// countIndexed counts the args named argv.<decimal>.
func countIndexed(args map[string]string) int {
	n := 0
	for k := range args {
		if rest, ok := strings.CutPrefix(k, "argv."); ok && rest != "" && strings.Trim(rest, "0123456789") == "" {
			n++
		}
	}
	return n
}

// asciiSpace is the white space arg.argv splits on. That is space, tab,
// LF, VT, FF and CR. A no-break or other Unicode space is part of an
// argument, as a shell would take it. strings.Fields split a file name on
// U+00A0.
func asciiSpace(r rune) bool {
	switch r {
	case ' ', '\t', '\n', '\v', '\f', '\r':
		return true
	}
	return false
}
