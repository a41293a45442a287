package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/apollo11/apollo11/pipeline"
	"github.com/apollo11/apollo11/wire"
)

// checkDryRunArgs checks a dry run's step args against what the connected
// executors describe (type_list, protocol section 8.11). Without a main
// control, or one that lists no types, it says so and checks nothing. So
// a dry run works offline. Issues go to stderr, and under --json only in
// the error. Any error among them fails the dry run.
func checkDryRunArgs(cf *clientFlags, plan *pipeline.Plan, stderr io.Writer) error {
	skip := func(why error) error {
		if !cf.asJSON {
			fmt.Fprintf(stderr, "args not checked against the executors: %v\n", why)
		}
		return nil
	}
	cl, err := cf.dial()
	if err != nil {
		return skip(err)
	}
	defer cl.Close()
	if !cl.HasFeature(wire.FeatureTypes) {
		return skip(errors.New("the main control does not list task types"))
	}
	types, err := cl.TypeListAll(cf.ctx)
	if err != nil {
		return skip(cf.timedOut(err))
	}
	schemas := make(map[string][]wire.Arg)
	for _, t := range types {
		if len(t.Args) > 0 {
			schemas[t.Name] = t.Args
		}
	}
	issues := pipeline.CheckArgs(plan, schemas)
	var errs []string
	for _, is := range issues {
		if !cf.asJSON {
			fmt.Fprintln(stderr, is)
		}
		if !is.Warning {
			errs = append(errs, is.String())
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("dry run: %d step args do not match what the executors describe: %s",
			len(errs), strings.Join(errs, "; "))
	}
	if !cf.asJSON {
		fmt.Fprintln(stderr, "args checked against the connected executors' descriptions")
	}
	return nil
}
