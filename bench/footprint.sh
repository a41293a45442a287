#!/bin/sh
# Idle RSS of the static, stripped build: a main control with a data dir
# and one executor connected, read from /proc/PID/status at each of the
# given ages (seconds since the executor started).
#
#   bench/footprint.sh [AGE ...]      (default: 10 60 360)
#
# The ceilings (main control 8 MB, executor 6 MB) are checked by
# TestFootprint_IdleRSS in cmd/apollo11.
set -eu
[ $# -gt 0 ] || set -- 10 60 360
dir=$(mktemp -d)
addr=127.0.0.1:${PORT:-19690}
mc=
ex=
trap 'kill $mc $ex 2>/dev/null; rm -rf "$dir"' EXIT
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$dir/apollo11" ./cmd/apollo11
echo "binary: $(wc -c <"$dir/apollo11") bytes; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
"$dir/apollo11" maincontrol --data-dir "$dir/data" --listen "$addr" 2>"$dir/mc.log" &
mc=$!
sleep 1
"$dir/apollo11" executor --connect "$addr" --id idle-1 2>"$dir/ex.log" &
ex=$!
rss() { awk '/^(VmRSS|RssAnon|RssFile):/{printf " %s %s kB", $1, $2}' "/proc/$1/status"; }
waited=0
for age in "$@"; do
	sleep $((age - waited))
	waited=$age
	echo "${age}s: main control$(rss $mc); executor$(rss $ex)"
done
