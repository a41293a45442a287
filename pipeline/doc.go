// Package pipeline reads pipeline files: YAML descriptions of a chain of
// tasks (fetch, clean, store) whose steps depend on each other. It checks a
// file (unknown steps, cycles with their path, bad values), fills in
// ${var} templates, and plans the steps in an order that submits every
// step after the steps it depends on, so that the main control's
// depends_on can never see a cycle. Parsing and planning do no I/O.
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
//
// Templates: ${name} is replaced in every value of the file (the name,
// key, ids, depends_on, type, args values, numbers and durations), not in
// keys nor in vars itself; $$ is a literal $. A variable given nowhere is
// an error, and so is a --var the file neither declares in vars nor uses
// (a misspelt name would otherwise leave the default in place). Substitution happens after the YAML is parsed, so a value
// cannot change the file's structure. The name, once filled in, is 1-64
// characters of a-z A-Z 0-9 _ . -: it names the run file.
package pipeline
