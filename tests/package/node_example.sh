#!/usr/bin/env bash
# node_example.sh TROUPE OWN_NODE: example (d). A coordinator (`troupe train
# --listen --expect=1`) waits for one node; own_node joins it and hosts its
# worker. Passes if both exit 0 and the coordinator's JSON says the job ran
# to its end on the node.
set -uo pipefail
troupe=$1
own_node=$2
dir=$(mktemp -d)
trap 'kill $coord 2>/dev/null; rm -rf "$dir"' EXIT
seed=3
echo "node_example: seed $seed"
timeout 200 "$troupe" train --algo=downpour --workers=1 --model=logreg \
  --train-examples=6000 --epochs=1 --seed=$seed --json --progress=lines \
  --listen=127.0.0.1:0 --expect=1 >"$dir/coord.json" 2>"$dir/coord.log" &
coord=$!
port=
for _ in $(seq 600); do
  port=$(grep -o 'listening on [^ ,]*' "$dir/coord.log" | head -1 | sed 's/.*://')
  [ -n "$port" ] && break
  sleep 0.1
done
[ -n "$port" ] || { cat "$dir/coord.log"; echo "FAIL: no coordinator" >&2; exit 1; }
timeout 200 "$own_node" "127.0.0.1:$port" 1
node_rc=$?
wait $coord
coord_rc=$?
tail -5 "$dir/coord.log"
[ "$node_rc" -eq 0 ] || { echo "FAIL: own_node exited $node_rc" >&2; exit 1; }
[ "$coord_rc" -eq 0 ] || { echo "FAIL: coordinator exited $coord_rc" >&2; exit 1; }
grep -q 'hosts 1 worker' "$dir/coord.log" \
  || { echo "FAIL: the node did not host the worker" >&2; exit 1; }
echo "node_example: the job ran on own_node"
