# Scenarios of tests/net/cluster_test.sh, which sources this file:
# distributed jobs that run to the end, and the monitor.
# Each uses the globals and helpers the entry point defines.
# shellcheck shell=bash

scenario_sync() {
  # Coordinator + 2 nodes reaches the target; a fixed-length run gives the
  # same parameters as the same job in one process.
  start_coordinator coord --algo=sync --workers=2 "${JOB[@]}" \
    --target-accuracy=0.78 --epochs=5 --listen=127.0.0.1:0 --expect=2
  start_node n1; N1=$NODE
  start_node n2; N2=$NODE
  check_done coord
  wait_for "$N1" 30 || fail "node 1 exited with status $?"
  wait_for "$N2" 30 || fail "node 2 exited with status $?"
  [ "$(key coord.json /nodes/1/workers)" = "[1]" ] || fail "nodes not reported"
  "$TROUPE" launch --local=2 --algo=sync --workers=2 "${JOB[@]}" --epochs=1 \
    --shm >dist.json 2>dist.log || fail "distributed fixed run failed"
  "$TROUPE" train --algo=sync --workers=2 "${JOB[@]}" --epochs=1 \
    >one.json 2>one.log || fail "single-process run failed"
  a=$(key dist.json /param_hash) b=$(key one.json /param_hash)
  echo "param_hash distributed $a, one process $b" >&2
  [ -n "$a" ] && [ "$a" = "$b" ] || fail "parameters differ: $a vs $b"
  # The same over TCP only: bit for bit the shared-memory path's result,
  # which carried the tensors above (--shm).
  "$TROUPE" launch --local=2 --algo=sync --workers=2 "${JOB[@]}" --epochs=1 \
    --shm=false >tcp.json 2>tcp.log || fail "distributed run over TCP failed"
  c=$(key tcp.json /param_hash)
  echo "param_hash over TCP only $c" >&2
  [ "$c" = "$b" ] || fail "parameters over TCP differ: $c vs $b"
  [ "$(key tcp.json /shm/received)" = 0 ] \
    || fail "--shm=false: tensors arrived through shared memory"
  got=$(key dist.json /shm/received) sent=$(key dist.json /shm/sent)
  echo "through shared memory at the coordinator: $got tensors received," \
    "$sent sent" >&2
  [ "$got" -gt 0 ] && [ "$sent" -gt 0 ] \
    || fail "--shm: no tensor went through shared memory"
}

scenario_downpour() {
  start_coordinator coord --algo=downpour --workers=2 "${JOB[@]}" \
    --target-accuracy=0.78 --epochs=5 --listen=127.0.0.1:0 --expect=2
  start_node n1 --workers=1; N1=$NODE
  start_node n2 --workers=1 --shards=1; N2=$NODE
  check_done coord
  wait_for "$N1" 30 || fail "node 1 exited with status $?"
  wait_for "$N2" 30 || fail "node 2 exited with status $?"
  for n in 0 1; do
    [ "$(key coord.json /nodes/$n/shards)" = "[0]" ] && host=$(key coord.json /nodes/$n/name)
  done
  [ "${host##*:}" = "$N2" ] || fail "the shard was not placed on node 2"
}

scenario_hosts() {
  # troupe launch --hosts over a remote shell (a local stand-in for ssh).
  printf '# test hosts\n127.0.0.1:1\nlocalhost:1  # second\n' >hosts
  "$TROUPE" launch --hosts=hosts --rsh="bash $HERE/fake_rsh.sh" \
    --remote-troupe="$TROUPE" --advertise=127.0.0.1 --listen=127.0.0.1:0 \
    --algo=downpour --workers=2 "${JOB[@]}" --target-accuracy=0.78 \
    --epochs=5 >launch.json 2>launch.log || fail "launch failed"
  [ "$(key launch.json /reached_target)" = true ] || fail "target not reached"
  [ "$(key launch.json /nodes/1/workers)" = "[1]" ] || fail "nodes not reported"
  printf 'host:zero\n' >badhosts
  "$TROUPE" launch --hosts=badhosts --algo=downpour 2>bad.log
  [ $? = 2 ] && grep -q "badhosts:1" bad.log || fail "bad hostfile accepted"
}

scenario_netns() {
  bash "$HERE/netns_test.sh" "$TROUPE" "$JSON_GET" "$SEED"
  exit $?
}

scenario_monitor() {
  # /metrics, /api/series and /api/cluster of a running job, and the
  # endpoint's token.
  timeout 120 "$TROUPE" train --algo=downpour --workers=2 "${JOB[@]}" \
    --model=mlp --epochs=10 --eval-every=0.5 --monitor=127.0.0.1:0 \
    --monitor-token=tok >coord.json 2>coord.log &
  COORD=$!
  PIDS+=($COORD)
  wait_log coord.log "test_acc" 60 || fail "no evaluation"
  MPORT=$(grep -o 'monitoring at http://127.0.0.1:[0-9]*' coord.log | sed 's/.*://')
  http_get "$MPORT" /metrics | head -1 | grep -q " 401" || fail "no token: not 401"
  http_get "$MPORT" /metrics "Authorization: Bearer tok" >metrics.txt
  grep -q '^troupe_worker_steps_total{worker="1"} [1-9]' metrics.txt \
    || fail "no worker steps in /metrics"
  grep -q '^troupe_test{metric="accuracy"} 0\.[0-9]' metrics.txt \
    || fail "no accuracy in /metrics"
  if command -v promtool >/dev/null; then
    sed '1,/^\r$/d' metrics.txt | promtool check metrics || fail "promtool"
  fi
  http_get "$MPORT" /api/series "Authorization: Bearer tok" | tail -1 >series.json
  [ "$("$JSON_GET" series.json /evaluations/0/accuracy)" != "" ] \
    || fail "no evaluations in /api/series"
  "$JSON_GET" series.json /train/0/samples_per_sec >/dev/null || fail "no curve"
  # Every role is listed with its counters; one node (this process). The
  # view is polled every 500 ms: wait (bounded) until it shows worker 1's
  # pushes and the shard's (one poll may show the shard's from worker 0
  # alone).
  for i in $(seq 40); do
    cluster_state "$MPORT" "Authorization: Bearer tok"
    n=$(key cluster.json "/actors/[name=shard 0]/received/push" 2>/dev/null)
    m=$(key cluster.json "/actors/[name=worker 1]/sent/push" 2>/dev/null)
    [ "${n:-0}" -gt 0 ] && [ "${m:-0}" -gt 0 ] && break
    sleep 0.25
  done
  for a in coordinator evaluator "shard 0" "worker 0" "worker 1"; do
    [ "$(key cluster.json "/actors/[name=$a]/state")" = ok ] \
      || fail "$a is not ok in /api/cluster"
  done
  [ "$(key cluster.json "/actors/[name=worker 1]/sent/push")" -gt 0 ] \
    || fail "worker 1 sent no push"
  [ "$(key cluster.json "/actors/[name=shard 0]/received/push")" -gt 0 ] \
    || fail "shard 0 received no push"
  key cluster.json /links/3/messages >/dev/null || fail "fewer than 4 links"
  [ "$(key cluster.json /job/running)" = true ] || fail "job not running"
  # The dashboard needs no token (it carries no data); the data does.
  http_get "$MPORT" / | head -1 | grep -q " 200" || fail "dashboard not served"
  http_get "$MPORT" /api/cluster | head -1 | grep -q " 401" \
    || fail "/api/cluster without the token: not 401"
  # Malformed requests and slow clients while it trains: the job still
  # ends well.
  for i in $(seq 20); do
    (exec 4<>"/dev/tcp/127.0.0.1/$MPORT" && head -c 3000 /dev/urandom >&4;
     exec 4<&-) 2>/dev/null &
    (exec 5<>"/dev/tcp/127.0.0.1/$MPORT" && printf 'GET /metrics HTTP/1.1\r\nHo' >&5;
     sleep 3; exec 5<&-) 2>/dev/null &
  done
  wait_for "$COORD" 120 || fail "coordinator exited with status $?"
  [ "$(key coord.json /stop_reason)" = "steps done" ] || fail "job did not complete"
  acc=$(key coord.json /test_accuracy)
  awk -v a="$acc" 'BEGIN { exit !(a >= 0.75) }' || fail "accuracy $acc < 0.75"
}

scenario_lsgd() {
  # LSGD over two nodes of 2 workers: one group per node by default, each
  # group's leader is one of its node's workers; then one node dies mid-run
  # and the rounds go on with the survivors (the lost group's rounds skip).
  start_coordinator coord --algo=lsgd --workers=4 "${JOB[@]}" \
    --target-accuracy=0.75 --epochs=6 --listen=127.0.0.1:0 --expect=2
  start_node n1 --workers=2; N1=$NODE
  start_node n2 --workers=2; N2=$NODE
  check_done coord
  wait_for "$N1" 30 || fail "node 1 exited with status $?"
  wait_for "$N2" 30 || fail "node 2 exited with status $?"
  [ "$(key coord.json /shards)" = 0 ] || fail "lsgd placed shards"
  for g in 0 1; do
    leader=$(key coord.json /leaders/groups/$g/leader)
    ws=$(key coord.json /nodes/$g/workers)
    [[ "$ws" == *"$leader"* ]] || fail "group $g's leader $leader is not on its node ($ws)"
    [ "$(key coord.json /leaders/groups/$g/rounds)" -gt 0 ] || fail "group $g had no round"
  done
  # The kill: the global leader's node may be the one that dies.
  start_coordinator coord2 --algo=lsgd --workers=4 "${JOB[@]}" --model=mlp \
    --epochs=12 --listen=127.0.0.1:0 --expect=2 --heartbeat=0.1 \
    --node-timeout=1
  start_node n3 --workers=2 --heartbeat=0.1 --node-timeout=1; N3=$NODE
  start_node n4 --workers=2 --heartbeat=0.1 --node-timeout=1; N4=$NODE
  wait_log coord2.log "epoch [2-9]\." 60 || fail "training did not start"
  kill -9 "$N4"
  wait_for "$COORD" 180 || fail "coordinator exited with status $?"
  [ "$(key coord2.json /stop_reason)" = "steps done" ] || fail "job did not complete"
  [ "$(key coord2.json /failures/1/role)" = worker ] || fail "two lost workers not reported"
  g=$(key coord2.json /leaders/global_rounds)
  [ "$g" -gt 0 ] || fail "no global round"
  acc=$(key coord2.json /test_accuracy)
  awk -v a="$acc" 'BEGIN { exit !(a >= 0.75) }' || fail "accuracy $acc < 0.75"
  wait_for "$N3" 30 || fail "surviving node exited with status $?"
}

scenario_decentral() {
  # SGP, DS-Sync and ShadowSync over two nodes of 2 workers, with the flags
  # of one process; then a node dies mid-run under SGP and DS-Sync and the
  # survivors finish the job.
  for algo in sgp dssync shadow; do
    # ShadowSync runs a fixed 3 epochs of mlp instead: logreg reached the
    # target within 12 ms, before a syncer had finished a round.
    goal=(--target-accuracy=0.75 --epochs=6)
    [ $algo = shadow ] && goal=(--model=mlp --epochs=3)
    start_coordinator "c_$algo" --algo=$algo --workers=4 "${JOB[@]}" \
      "${goal[@]}" --listen=127.0.0.1:0 --expect=2
    start_node "n1_$algo" --workers=2; N1=$NODE
    start_node "n2_$algo" --workers=2; N2=$NODE
    if [ $algo = shadow ]; then
      wait_for "$COORD" 180 || fail "shadow: coordinator exited with status $?"
      acc=$(key c_shadow.json /test_accuracy)
      awk -v a="$acc" 'BEGIN { exit !(a >= 0.75) }' || fail "shadow: accuracy $acc < 0.75"
    else
      check_done "c_$algo"
    fi
    wait_for "$N1" 30 || fail "$algo: node 1 exited with status $?"
    wait_for "$N2" 30 || fail "$algo: node 2 exited with status $?"
    [ "$(key "c_$algo.json" /shards)" = 0 ] || fail "$algo placed shards"
  done
  # Stopped at the target, shares were still in flight: the weights sum to
  # at most n (exactly n at quiescence: tests/algos/decentral_test).
  w=$(key c_sgp.json /sgp/weight_sum)
  awk -v w="$w" 'BEGIN { exit !(w > 0 && w < 4.000001) }' \
    || fail "sgp weights sum to $w"
  # ShadowSync: one syncer per node, each synchronized its node's workers.
  for s in 0 1; do
    [ "$(key c_shadow.json /shadow/syncers/$s/rounds)" -gt 0 ] \
      || fail "syncer $s had no round"
  done
  key c_shadow.json /shadow/syncers/2 >/dev/null 2>&1 \
    && fail "more than one syncer per node"
  for algo in sgp dssync; do
    start_coordinator "k_$algo" --algo=$algo --workers=4 "${JOB[@]}" \
      --epochs=30 --listen=127.0.0.1:0 --expect=2 --heartbeat=0.1 \
      --node-timeout=1
    start_node "n3_$algo" --workers=2 --heartbeat=0.1 --node-timeout=1; N3=$NODE
    start_node "n4_$algo" --workers=2 --heartbeat=0.1 --node-timeout=1; N4=$NODE
    wait_log "k_$algo.log" "epoch [2-9]\." 60 || fail "$algo: training did not start"
    kill -9 "$N4"
    wait_for "$COORD" 180 || fail "$algo: coordinator exited with status $?"
    [ "$(key "k_$algo.json" /stop_reason)" = "steps done" ] \
      || fail "$algo: job did not complete"
    [ "$(key "k_$algo.json" /failures/1/role)" = worker ] \
      || fail "$algo: two lost workers not reported"
    acc=$(key "k_$algo.json" /test_accuracy)
    awk -v a="$acc" 'BEGIN { exit !(a >= 0.75) }' || fail "$algo: accuracy $acc < 0.75"
    wait_for "$N3" 30 || fail "$algo: surviving node exited with status $?"
  done
}

scenario_direct() {
  # Shards on one node, workers on another: with direct links (the default)
  # their traffic bypasses the coordinator, whose port then carries control
  # only; the parameters are bit for bit those of the same job in one
  # process and of the job routed through the coordinator. A peer port is
  # guarded like the coordinator's: garbage and an oversized frame sent to
  # it are cut off, and the job goes on.
  # run_split NAME NODE_ARGS...: sync, 2 workers, 2 shards (the coordinator
  # also gets the array CX)
  CX=()
  run_split() {
    local name=$1
    shift
    start_coordinator "$name" --algo=sync --workers=2 --shards=2 "${JOB[@]}" \
      --epochs=1 --listen=127.0.0.1:0 --expect=2 ${CX[@]+"${CX[@]}"}
    start_node "$name-s" --workers=0 --shards=2 "$@"; NS=$NODE
    wait_log "$name-s.log" "joined the job" 60 || fail "shard node not joined"
    start_node "$name-w" --workers=2 "$@"; NW=$NODE
    wait_for "$COORD" 180 || fail "$name: coordinator exited with status $?"
    wait_for "$NS" 30 || fail "$name: shard node exited with status $?"
    wait_for "$NW" 30 || fail "$name: worker node exited with status $?"
  }
  # Over TCP (shared memory would shrink the routed frames too, to a
  # reference each): the bytes through the coordinator are the payloads.
  CX=(--shm=false)
  run_split direct --shm=false
  grep -q "direct link to the node at 127.0.0.1:" direct-w.log \
    || fail "the worker node made no direct link"
  peer=$(grep -o 'link to this one at [^ ]*' direct-s.log | sed 's/.*://')
  [ -n "$peer" ] || fail "the shard node opened no peer port"
  # The same job with the traffic through the coordinator.
  run_split routed --direct-links=false --shm=false
  grep -q "direct link" routed-w.log && fail "--direct-links=false linked"
  "$TROUPE" train --algo=sync --workers=2 --shards=2 "${JOB[@]}" --epochs=1 \
    >one.json 2>one.log || fail "single-process run failed"
  a=$(key direct.json /param_hash) b=$(key routed.json /param_hash)
  c=$(key one.json /param_hash)
  echo "param_hash direct $a, through the coordinator $b, one process $c" >&2
  [ -n "$a" ] && [ "$a" = "$c" ] && [ "$b" = "$c" ] \
    || fail "parameters differ: $a, $b, $c"
  steps=$(key direct.json /steps_done)
  d=$(key direct.json /guard/bytes_in) r=$(key routed.json /guard/bytes_in)
  echo "bytes into the coordinator per step: direct $((d / steps)), through" \
    "it $((r / steps)) ($steps steps)" >&2
  [ $((d * 10)) -lt "$r" ] \
    || fail "direct links left $d bytes into the coordinator against $r"
  # Attacks on a peer port while a job runs (shared memory on, as by
  # default): the job ends as before.
  start_coordinator attacked --algo=sync --workers=2 --shards=2 "${JOB[@]}" \
    --epochs=1 --listen=127.0.0.1:0 --expect=2
  start_node attacked-s --workers=0 --shards=2; NS=$NODE
  wait_log attacked-s.log "link to this one at" 60 || fail "no peer port"
  peer=$(grep -o 'link to this one at [^ ]*' attacked-s.log | sed 's/.*://')
  timeout 30 "$HOSTILE" --mode=random --port="$peer" --connections=4 \
    2>hostile.log || fail "the random peer could not connect to $peer"
  timeout 30 "$HOSTILE" --mode=oversized --port="$peer" --seconds=2 \
    2>>hostile.log || fail "the oversized peer could not connect to $peer"
  start_node attacked-w --workers=2; NW=$NODE
  wait_for "$COORD" 180 || fail "attacked: coordinator exited with status $?"
  wait_for "$NS" 30 || fail "attacked: shard node exited with status $?"
  wait_for "$NW" 30 || fail "attacked: worker node exited with status $?"
  e=$(key attacked.json /param_hash)
  [ "$e" = "$c" ] || fail "parameters after the attacks differ: $e vs $c"
  grep -q "guard: cut off" attacked-s.log \
    || fail "the peer port's guard cut nothing off"
  # With TLS the nodes link through TLS too.
  bash "$HERE/make_certs.sh" certs >/dev/null 2>&1 || fail "make_certs failed"
  CX=(--tls-cert=certs/node.pem --tls-key=certs/node.key --tls-ca=certs/ca.pem)
  run_split tls "${CX[@]}"
  grep -q "direct link to the node at" tls-w.log \
    || fail "no direct link with TLS"
  f=$(key tls.json /param_hash)
  [ "$f" = "$c" ] || fail "parameters with TLS differ: $f vs $c"
}
