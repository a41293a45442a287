package main

import (
	"fmt"
	"io"
	"strings"
)

// subcommand is one word of a command that has several, such as
// `pipeline run`. run gets the words after it.
type subcommand struct {
	name string
	run  func(args []string) error
}

// runSubcommands runs the subcommand that args[0] names. Without one it
// prints usage and exits 2. A help word prints usage.
func runSubcommands(cmd, usage string, subs []subcommand, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprintln(stderr, usage)
		return exitError{Code: 2}
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprintln(stdout, usage)
		return nil
	}
	names := make([]string, len(subs))
	for i, s := range subs {
		if s.name == args[0] {
			return s.run(args[1:])
		}
		names[i] = s.name
	}
	return usageError(fmt.Errorf("unknown %s command %q (%s)", cmd, args[0], strings.Join(names, ", ")))
}
