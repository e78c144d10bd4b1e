#!/usr/bin/env bash
# Two "hosts" in network namespaces joined by a veth pair with 5 ms of added
# latency each way (tc netem): the coordinator in one, a node in the other.
#   netns_test.sh TROUPE JSON_GET SEED      (exit 77: skipped, not root)
set -uo pipefail
TROUPE=$1
JSON_GET=$2
SEED=$3
if [ "$(id -u)" != 0 ] || ! command -v ip >/dev/null || ! command -v tc >/dev/null; then
  echo "skipped: needs root, ip and tc (iproute2)" >&2
  exit 77
fi
A=troupe-a-$$ B=troupe-b-$$
WORK=$(mktemp -d /tmp/troupe-netns.XXXXXX)
cleanup() {
  ip netns pids "$A" 2>/dev/null | xargs -r kill -9
  ip netns pids "$B" 2>/dev/null | xargs -r kill -9
  ip netns del "$A" 2>/dev/null
  ip netns del "$B" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT
fail() {
  echo "FAIL (netns): $*" >&2
  for f in "$WORK"/*.log; do [ -f "$f" ] && { echo "--- $f" >&2; tail -15 "$f" >&2; }; done
  exit 1
}
ip netns add "$A" && ip netns add "$B" || { echo "skipped: ip netns add failed" >&2; exit 77; }
ip link add va-$$ type veth peer name vb-$$ || fail "veth"
ip link set va-$$ netns "$A" && ip link set vb-$$ netns "$B" || fail "veth move"
ip -n "$A" addr add 10.77.0.1/24 dev va-$$ && ip -n "$B" addr add 10.77.0.2/24 dev vb-$$ \
  || fail "addresses"
for ns in "$A" "$B"; do ip -n "$ns" link set lo up; done
ip -n "$A" link set va-$$ up && ip -n "$B" link set vb-$$ up || fail "link up"
# Some kernels (this sandbox's among them) lack sch_netem: then the test runs
# without added latency and says so.
if tc -n "$A" qdisc add dev va-$$ root netem delay 5ms 2>/dev/null; then
  tc -n "$B" qdisc add dev vb-$$ root netem delay 5ms || fail "netem"
else
  echo "note: tc netem is not available in this kernel; no added latency" >&2
fi
rtt=$(ip netns exec "$B" ping -c 3 -q 10.77.0.1 2>/dev/null | grep -o 'mdev = [0-9.]*/[0-9.]*' | cut -d/ -f2)
echo "round trip between the namespaces: ${rtt:-?} ms (5 ms netem each way)" >&2

cd "$WORK"
ip netns exec "$A" timeout 200 "$TROUPE" train --algo=downpour --workers=1 \
  --model=logreg --train-examples=12000 --seed="$SEED" --epochs=3 \
  --target-accuracy=0.78 --progress=lines --json --listen=10.77.0.1:0 \
  --expect=1 >coord.json 2>coord.log &
COORD=$!
PORT=
for _ in $(seq 600); do
  PORT=$(grep -o 'listening on [^ ,]*' coord.log 2>/dev/null | sed 's/.*://')
  [ -n "$PORT" ] && break
  sleep 0.1
done
[ -n "$PORT" ] || fail "coordinator did not listen"
ip netns exec "$B" timeout 200 "$TROUPE" node --join=10.77.0.1:"$PORT" 2>node.log &
NODE=$!
wait "$COORD" || fail "coordinator exited with status $?"
wait "$NODE" || fail "node exited with status $?"
[ "$("$JSON_GET" coord.json /reached_target)" = true ] || fail "target not reached"
echo "job across namespaces: $("$JSON_GET" coord.json /seconds) s, node $("$JSON_GET" coord.json /nodes/0/name)" >&2
echo "PASS (netns)" >&2
