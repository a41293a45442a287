// Package pipeline reads pipeline files. A pipeline file is YAML that
// describes a chain of tasks (fetch, clean, store) whose steps depend on
// each other. The package checks a file for unknown steps, cycles (with
// their path) and bad values. It fills in ${var} templates. It plans the
// steps so that each is submitted after the steps it depends on. So the
// main control's depends_on can never see a cycle. Parsing and planning
// do no I/O.
// Submit, SubmitAndWait and Status send a plan through a client.Client.
// The dependency points this way so client users never compile YAML.
//
// A file:
//
//	name: nightly-report
//	vars: {date: today}          # defaults, overridden by --var
//	key: nightly-${date}         # optional: steps submit with key <key>/<step id>
//	defaults: {max_attempts: 3, timeout: 10m, priority: 0}
//	steps:
//	  - id: fetch
//	    type: exec
//	    args: {argv: "/usr/local/bin/fetch --date ${date}"}
//	    max_attempts: 3
//	    timeout: 10m
//	  - id: clean
//	    type: echo
//	    depends_on: [fetch]
//	    args: {in: "${steps.fetch.out.path}"}  # fetch's output out.path
//	    optional: true                         # its failure cancels nothing
//	    compensate: {type: rm, args: {path: "${steps.clean.out.path}"}}
//	  - id: page
//	    type: echo
//	    depends_on: [clean]
//	    when: failed                 # runs only if clean failed; else skipped
//
// The attributes optional, when and compensate, and references to a
// step's outputs, need a main control with the runs feature. A reference
// ${steps.<id>.out.<key>} may appear only in args. It must name a step
// the reader depends on, directly or through others. A compensate may
// also read its own step. The main control fills references in.
//
// Templates: ${name} is replaced in every value of the file. That covers
// the name, key, ids, depends_on, type, args values, numbers and durations.
// Keys and vars itself are not expanded. $$ is a literal $. A name
// steps.* is an output reference, never a variable. A variable
// given nowhere is an error. So is a --var the file neither declares in
// vars nor uses. Otherwise a misspelt name would leave the default in place.
// Substitution happens after the YAML is parsed. So a value cannot change
// the file's structure. The filled-in name names the run file. It is 1-64
// characters of a-z A-Z 0-9 _ . -.
package pipeline
