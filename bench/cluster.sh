#!/bin/bash
# The cluster throughput comparison of bench/README.md: one durable main
# control, then a 3-member cluster on loopback, under the same load
# (apollo11-bench --addr --tasks TASKS, its default producers and 8 raw
# executors), with each process's CPU ticks (100 a second).
#   go build ./cmd/apollo11 ./cmd/apollo11-bench && TASKS=100000 bench/cluster.sh
B=${APOLLO11:-./apollo11}; H=${APOLLO11_BENCH:-./apollo11-bench}; D=$(mktemp -d)
cpu() { awk '{print $14+$15}' /proc/$1/stat; }
TASKS=${TASKS:-20000}
echo "== single"; uptime
$B maincontrol --listen 127.0.0.1:19601 --data-dir $D/single --log-level warn & P=$!
sleep 1.5
c0=$(cpu $P); $H --addr 127.0.0.1:19601 --tasks $TASKS 2>&1 | grep -iE "throughput|tasks/s|submit|done" | head -8; c1=$(cpu $P)
echo "single cpu ticks: $((c1-c0))"
kill $P; wait $P 2>/dev/null
echo "== cluster"; uptime
M="127.0.0.1:19611=127.0.0.1:19621,127.0.0.1:19612=127.0.0.1:19622,127.0.0.1:19613=127.0.0.1:19623"
PIDS=()
for i in 1 2 3; do
  $B maincontrol --listen 127.0.0.1:1961$i --data-dir $D/m$i --raft-listen 127.0.0.1:1962$i --cluster-members $M --log-level warn & PIDS+=($!)
done
sleep 3
L=""
# find the leader by hello
L=$(python3 - <<'PY'
import socket,struct
def frame(s):
    h=s.recv(4,socket.MSG_WAITALL); n=struct.unpack('>I',h)[0]; return s.recv(n,socket.MSG_WAITALL).decode()
for i in (1,2,3):
    s=socket.create_connection(("127.0.0.1",19610+i)); frame(s)
    p=b"type=hello\nreq=h"; s.sendall(struct.pack('>I',len(p))+p); r=frame(s)
    if "role=leader" in r: print("127.0.0.1:%d"%(19610+i)); break
PY
)
echo "leader $L"
declare -A C0
for p in "${PIDS[@]}"; do C0[$p]=$(cpu $p); done
$H --addr $L --tasks $TASKS 2>&1 | grep -iE "throughput|tasks/s|submit|done" | head -8
for p in "${PIDS[@]}"; do echo "member pid $p cpu ticks: $(( $(cpu $p) - ${C0[$p]} ))"; done
kill "${PIDS[@]}"; wait 2>/dev/null
uptime
rm -rf $D
