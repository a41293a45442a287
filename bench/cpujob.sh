#!/bin/sh
# Server CPU per job in the one-at-a-time regime, in interleaved rounds:
# apollo11 (--fsync always), apollo11 (--fsync batch, 10 ms: still
# confirmed only after the fsync, fewer fsyncs), gearmand in memory
# (background jobs), gearmand durable (libsqlite3), and an older apollo11
# binary, each round in that order. Interleaving is what makes the
# ratios mean something on a shared host: its load moves more than the
# difference.
#
#   go build -o /tmp/apollo11 ./cmd/apollo11
#   go build -o /tmp/apollo11-bench ./cmd/apollo11-bench
#   go build -o /tmp/peers ./bench/peers
#   bench/cpujob.sh /tmp OLD_APOLLO11 [rounds]
#
# OLD_APOLLO11 is the binary to compare with (say, one built at an
# earlier commit). gearmand's durable run takes 5,000 jobs, as it makes
# about 600 a second; its CPU is printed per 5,000. Each line starts
# with the time and the 1-minute load average.
set -eu
dir=$1
old=$2
rounds=${3:-3}
data=$(mktemp -d)
trap 'rm -rf "$data"' EXIT

stamp() { printf '%s %s ' "$(date +%T)" "$(cut -d' ' -f1 /proc/loadavg)"; }

apollo() {
	rm -rf "$data/d"
	bin=$1
	shift
	"$dir/apollo11-bench" --binary "$bin" --dir "$data/d" "$@" --executors 8 --slots 1 \
		--producers 4 --window 64 --payload 100 --wait=false --tasks 20000 2>&1 |
		grep -E 'throughput|submit -> submitted|main control  cpu' | tr -s ' ' | tr '\n' ' '
	echo
}

peer() {
	"$dir/peers" --regime one-at-a-time "$@" 2>&1 | grep -E 'throughput|server' | tr -s ' ' | tr '\n' ' '
	echo
}

i=1
while [ "$i" -le "$rounds" ]; do
	stamp; printf 'round %d apollo11: ' "$i"; apollo "$dir/apollo11" --fsync always
	stamp; printf 'round %d apollo11 batch 10ms: ' "$i"
	apollo "$dir/apollo11" --fsync batch --maincontrol-args "--fsync-interval 10ms"
	stamp; printf 'round %d gearmand in memory: ' "$i"; peer --system gearmand --tasks 20000
	stamp; printf 'round %d gearmand libsqlite3 (5,000 jobs): ' "$i"; peer --system gearmand --fsync always --tasks 5000
	stamp; printf 'round %d old apollo11: ' "$i"; apollo "$old" --fsync always
	i=$((i + 1))
done
