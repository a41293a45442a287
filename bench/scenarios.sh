#!/bin/sh
# Runs the standard scenarios of bench/README.md and keeps every report.
#
#   go build -o /tmp/apollo11 ./cmd/apollo11
#   go build -o /tmp/apollo11-bench ./cmd/apollo11-bench
#   bench/scenarios.sh /tmp/apollo11-bench /tmp/bench-results
#
# The harness starts the apollo11 binary beside it.
#
# Each scenario writes NAME.txt (the table) and NAME.json; the load
# average before each run is logged, because other load skews the
# numbers (every report also says how busy the machine was).
set -eu
bin=${1:-apollo11-bench}
out=${2:-bench-results}
mkdir -p "$out"

# idle_share prints the machine's idle percentage over the next 3 s.
idle_share() {
	a=$(head -1 /proc/stat)
	sleep 3
	b=$(head -1 /proc/stat)
	echo "$a
$b" | awk 'NR==1{for(i=2;i<=9;i++)x[i]=$i} NR==2{for(i=2;i<=9;i++){d=$i-x[i];t+=d;if(i==5||i==6)idle+=d}; print int(100*idle/t)}'
}

# With QUIET=N, wait (up to 10 min) until the machine is at least N% idle:
# on a shared machine other jobs skew the numbers.
wait_quiet() {
	[ -n "${QUIET:-}" ] || return 0
	i=0
	while [ "$(idle_share)" -lt "$QUIET" ] && [ $i -lt 200 ]; do i=$((i + 1)); done
}

run() {
	name=$1
	shift
	wait_quiet
	echo "== $name: $*" | tee -a "$out/log"
	echo "   load average: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/log"
	"$bin" "$@" --json "$out/$name.json" >"$out/$name.txt"
	cat "$out/$name.txt"
}

# 0. The host itself: how long this machine keeps a running thread off its
# CPU. Every latency below includes these stalls.
run stalls             stalls --duration 10s
# Headline (issue 4): 4 producers, 8 raw executors, echo, persistence off.
run headline           --tasks 1000000 --plot "$out/headline.svg"
run headline-nowait    --tasks 1000000 --wait=false
# 1. Throughput by fsync mode.
run fsync-never        --fsync never  --tasks 1000000
run fsync-batch        --fsync batch  --tasks 1000000
run fsync-always       --fsync always --duration 20s
# 2. Latency at 50% of the peak (measured first for 5 s).
run latency-50         --rate 50% --duration 30s --plot "$out/latency-50.svg"
run latency-50-always  --fsync always --rate 50% --duration 30s
# 3. 10,000 idle executors.
run idle               idle --executors 10000
# 4. 1,000,000 pending tasks, restarts.
run pending            pending --tasks 1000000
# 5. Failover.
run failover           failover
run failover-process   failover --victim process
# 6. Fairness: a one-at-a-time client's round trips under a flood.
run flood              flood
# Real executor processes instead of raw ones.
run process-executors  --executor-mode process --tasks 300000
# The wire probe against our own main control.
run wire               wire --rate 500 --duration 20s --seed 1
