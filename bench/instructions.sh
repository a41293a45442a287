#!/bin/sh
# Counts the instructions one task costs in the core cycle benchmark, for
# comparing two trees on a machine whose timing is too noisy to show a
# change of a few percent (bench/README.md, the Headline section).
#
#   go test -c -o /tmp/a.test ./maincontrol/core/    # in each tree
#   bench/instructions.sh /tmp/a.test [tasks] [top]
#
# It runs BenchmarkCore_Cycle/inflight=256/clock=fake (the logged and the
# unlogged run, `tasks` tasks each, 100,000 by default; PATTERN=... picks
# other benchmarks) under valgrind's cachegrind with GOMAXPROCS=1 and
# prints instructions per task over all the runs, and the `top` functions
# (20 by default) with theirs.
#
# Garbage collection, the scheduler and the benchmark's calibration loop
# are left out: under valgrind the collector's share depends on timing,
# so it differs between runs of the same binary. Read allocation from the
# benchmark's B/op instead. Needs valgrind (cg_annotate comes with it).
set -eu
bin=$1
tasks=${2:-100000}
top=${3:-20}
out=$(mktemp)
trap 'rm -f "$out" "$out.txt"' EXIT

GOMAXPROCS=1 valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file="$out" \
	"$bin" -test.run XXX -test.bench "${PATTERN:-Core_Cycle/inflight=256/clock=fake$}" \
	-test.benchtime "${tasks}x" >"$out.txt" 2>&1
runs=$(grep -c '^Benchmark' "$out.txt" || true)
if [ "$runs" -eq 0 ]; then
	cat "$out.txt" >&2
	echo "no benchmark ran" >&2
	exit 1
fi

# `runs` runs of `tasks` each; functions are summed across inlined copies.
cg_annotate --auto=no --threshold=0 "$out" | awk -v per=$((runs * tasks)) -v top="$top" '
/PROGRAM TOTALS/ { next }
/^ *[0-9,]+ \(/ {
	ir = $1; gsub(",", "", ir)
	f = $0; sub(/^ *[0-9,]+ \( *[0-9.]+%\) */, "", f); sub(/.*:/, "", f)
	if (f ~ /calibrationNs/ ||
	    f ~ /^runtime\.(gc|wb|scan|grey|mark|bulkBarrier|typePointers|findObject|tryDefer|sweep|mProf|findRunnable|schedule|park|futex|notesleep|stopm|mPark|runqgrab|stealWork|nanotime|usleep|sysmon)/ ||
	    f ~ /^gcWriteBarrier/) {
		skipped += ir
		next
	}
	kept += ir
	by[f] += ir
}
END {
	printf "%.0f instructions per task (%.0f more in GC and scheduling, left out)\n", kept / per, skipped / per
	n = 0
	for (f in by) names[n++] = f
	for (i = 0; i < n; i++)
		for (j = i + 1; j < n; j++)
			if (by[names[j]] > by[names[i]]) { t = names[i]; names[i] = names[j]; names[j] = t }
	for (i = 0; i < n && i < top; i++) printf "%8.0f  %s\n", by[names[i]] / per, names[i]
}'
