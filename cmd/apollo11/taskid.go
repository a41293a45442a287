package main

import (
	"flag"
	"fmt"
	"strconv"
)

// taskIDRule is what a task id is, for the errors that refuse one. Ids
// start at 1 (docs/protocol.md), so 0 and negative numbers are none.
const taskIDRule = "a task id is a whole number from 1"

// parseTaskID reads a task id given as an operand.
func parseTaskID(s string) (uint64, error) {
	id, err := strconv.ParseUint(s, 10, 64)
	if err != nil || id == 0 {
		return 0, fmt.Errorf("%q is not a task id (%s)", s, taskIDRule)
	}
	return id, nil
}

// taskIDArg reads the one TASK_ID operand into id.
func taskIDArg(id *uint64) func(fs *flag.FlagSet) error {
	return func(fs *flag.FlagSet) (err error) {
		if fs.NArg() != 1 {
			return fmt.Errorf("want exactly one task id")
		}
		*id, err = parseTaskID(fs.Arg(0))
		return err
	}
}

// afterFlag is list's --after, a task id or 0 for the first page. As a
// plain uint64 flag, --after -5 said only "parse error".
type afterFlag uint64

func (a *afterFlag) String() string { return strconv.FormatUint(uint64(*a), 10) }

func (a *afterFlag) Set(s string) error {
	if s == "0" {
		*a = 0
		return nil
	}
	id, err := parseTaskID(s)
	if err != nil {
		return fmt.Errorf("want a task id, or 0 for the first page (%s)", taskIDRule)
	}
	*a = afterFlag(id)
	return nil
}
