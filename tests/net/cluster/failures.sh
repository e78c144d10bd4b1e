# Scenarios of tests/net/cluster_test.sh, which sources this file:
# nodes or the coordinator killed, hung or stuck mid-run.
# Each uses the globals and helpers the entry point defines.
# shellcheck shell=bash

scenario_kill_freeze() {
  # One worker node dies (SIGKILL) or hangs (SIGSTOP) mid-run: the job goes
  # on with the survivor, which takes over the lost worker's data.
  # mlp for a few seconds of training, so the failure comes mid-run
  # (TROUPE_KILL_EPOCHS: fewer under the sanitizers, scripts/sanitize).
  start_coordinator coord --algo=downpour --workers=2 "${JOB[@]}" --model=mlp \
    --epochs="${TROUPE_KILL_EPOCHS:-20}" --listen=127.0.0.1:0 --expect=2 --heartbeat=0.1 \
    --node-timeout=1
  start_node n1 --heartbeat=0.1 --node-timeout=1; N1=$NODE
  start_node n2 --heartbeat=0.1 --node-timeout=1; N2=$NODE
  wait_log coord.log "hosts 1 worker" 60 || fail "nodes did not join"
  wait_log coord.log "epoch [2-9]\." 60 || fail "training did not start"
  before=$(date +%s%3N)
  if [ "$SCENARIO" = kill ]; then kill -9 "$N2"; else kill -STOP "$N2"; fi
  wait_for "$COORD" 180 || fail "coordinator exited with status $?"
  kill -9 "$N2" 2>/dev/null
  [ "$(key coord.json /stop_reason)" = "steps done" ] || fail "job did not complete"
  lost=$(key coord.json /lost_nodes/0)
  [ "${lost##*:}" = "$N2" ] || fail "lost node $lost reported, not pid $N2"
  w=$(key coord.json /failures/0/index)
  [ "$(key coord.json /failures/0/reassigned_to)" = "[$((1 - w))]" ] \
    || fail "worker $w's data not reassigned to the survivor"
  # Every step of the budget was taken: the survivor's own, the lost
  # worker's before it died, and the lost worker's remaining ones.
  budget=$((2 * $(key coord.json /steps_per_worker)))
  done_steps=$(($(key coord.json /steps) + $(key coord.json /lost_worker_steps)))
  [ "$done_steps" -ge "$budget" ] || fail "$done_steps of $budget steps taken"
  detected=$(key coord.json /failures/0/unix_ms)
  echo "detection latency ($SCENARIO): $((detected - before)) ms" >&2
  acc=$(key coord.json /test_accuracy)
  awk -v a="$acc" 'BEGIN { exit !(a >= 0.75) }' || fail "accuracy $acc < 0.75"
  wait_for "$N1" 30 || fail "surviving node exited with status $?"
  [ "$SCENARIO" = freeze ] || { echo "PASS ($SCENARIO)" >&2; exit 0; }
  # A node hangs as training starts and is declared lost only after the
  # other worker finished: a truthful partial completion with status 0, not
  # "every worker was lost".
  start_coordinator late --algo=downpour --workers=2 "${JOB[@]}" --epochs=10 \
    --listen=127.0.0.1:0 --expect=2 --heartbeat=0.5 --node-timeout=10
  start_node n3 --heartbeat=0.5 --node-timeout=10; N3=$NODE
  start_node n4 --heartbeat=0.5 --node-timeout=10; N4=$NODE
  wait_log late.log "epoch 0\." 60 || fail "training did not start"
  kill -STOP "$N4"
  wait_for "$COORD" 120; s=$?
  kill -9 "$N4" 2>/dev/null
  [ "$s" = 0 ] || fail "coordinator exited with $s after a partial completion"
  grep -q "every worker was lost" late.log late.json && fail "false 'every worker was lost'"
  [ "$(key late.json /stop_reason)" = "partially done" ] || fail "stop reason $(key late.json /stop_reason)"
  planned=$(key late.json /steps_planned) done_=$(key late.json /steps_done) lost=$(key late.json /steps_lost)
  echo "partial completion: planned $planned, done $done_, lost $lost" >&2
  [ "$planned" = $((done_ + lost)) ] || fail "ledger $planned != $done_ + $lost"
  [ "$lost" -gt 0 ] || fail "no step reported lost"
  key late.json /warning | grep -q "steps not taken" || fail "no warning says what was lost"
  wait_for "$N3" 30 || fail "surviving node exited with status $?"
}

scenario_shardkill() {
  # The node that holds the only shard dies: the job ends with an error that
  # names the shard, reports the last evaluated parameters, and nobody hangs.
  start_coordinator coord --algo=downpour --workers=2 "${JOB[@]}" --model=mlp \
    --epochs=20 --listen=127.0.0.1:0 --expect=2 --heartbeat=0.1 \
    --node-timeout=1 --eval-every=0.5
  start_node n1 --workers=2 --heartbeat=0.1 --node-timeout=1; N1=$NODE
  start_node n2 --workers=0 --shards=1 --heartbeat=0.1 --node-timeout=1; N2=$NODE
  wait_log coord.log "test_acc" 60 || fail "no evaluation before the kill"
  kill -9 "$N2"
  wait_for "$COORD" 60; s=$?
  [ "$s" = 1 ] || fail "coordinator exited with $s, expected 1"
  [ "$(key coord.json /stop_reason)" = "shard lost" ] || fail "stop reason"
  key coord.json /error | grep -q "shard 0 on .*:$N2 was lost" \
    || fail "error does not name the shard and node"
  # The report's accuracy is the last evaluation's (the one before the
  # kill, whatever the machine's speed made it), and training had begun.
  acc=$(key coord.json /test_accuracy)
  last=$(grep -o 'test_acc [0-9.]*' coord.log | tail -1 | cut -d' ' -f2)
  echo "reported accuracy $acc, last evaluated $last" >&2
  awk -v a="$acc" -v b="$last" 'BEGIN { exit !(a == b && a > 0.2) }' \
    || fail "reported accuracy $acc, the last evaluation said $last"
  # The job failed: the surviving node says so with a non-zero status.
  wait_for "$N1" 30; s=$?
  [ "$s" = 1 ] || fail "worker node exited with $s, expected 1"
  # A node holding two shards dies: the job ends at once (the roles known
  # lost are not waited for: the request timeout is 20 s here and 60 s by
  # default), naming the shards, and both processes exit 1.
  start_coordinator coord2 --algo=downpour --workers=2 --shards=2 "${JOB[@]}" \
    --model=mlp --epochs=20 --listen=127.0.0.1:0 --expect=2 --heartbeat=0.1 \
    --node-timeout=1 --eval-every=0.5 --request-timeout=60
  start_node n3 --workers=2 --heartbeat=0.1 --node-timeout=1; N3=$NODE
  start_node n4 --workers=0 --shards=2 --heartbeat=0.1 --node-timeout=1; N4=$NODE
  wait_log coord2.log "test_acc" 60 || fail "no evaluation before the kill"
  before=$(date +%s%3N)
  kill -9 "$N4"
  wait_for "$COORD" 60; s=$?
  took=$(($(date +%s%3N) - before))
  echo "two shards lost: the job ended $took ms after the kill" >&2
  [ "$s" = 1 ] || fail "coordinator exited with $s, expected 1"
  [ "$took" -lt 20000 ] || fail "the job ended $took ms after the kill (limit 20 s)"
  key coord2.json /error | grep -q "shard 0 on .*:$N4 was lost.*with shards 0, 1" \
    || fail "error does not name both shards and the node"
  wait_for "$N3" 30; s=$?
  [ "$s" = 1 ] || fail "worker node exited with $s, expected 1"
  grep -q "failed: shard lost" n3.log || fail "the worker node does not say the job failed"
}

scenario_coordkill() {
  # The coordinator dies mid-run: every node stops its roles and exits with
  # status 1 within seconds, instead of waiting on requests to time out.
  start_coordinator coord --algo=downpour --workers=2 "${JOB[@]}" --model=mlp \
    --epochs=20 --listen=127.0.0.1:0 --expect=2
  start_node n1; N1=$NODE
  start_node n2; N2=$NODE
  wait_log coord.log "epoch [2-9]\." 60 || fail "training did not start"
  pkill -9 -P "$COORD" 2>/dev/null; kill -9 "$COORD" 2>/dev/null
  for n in "$N1" "$N2"; do
    wait_for "$n" 10; s=$?
    [ "$s" = 1 ] || fail "node $n exited with $s, expected 1 within 10 s"
  done
  grep -q "lost the coordinator" n1.log || fail "node 1 does not say why"
}

scenario_stuck() {
  # A node hangs (SIGSTOP) with a long node timeout: before the job gives
  # up on it, the dashboard's data shows its node unreachable and its worker
  # stuck, the other worker ok; after SIGCONT both are ok and the job ends.
  start_coordinator coord --algo=downpour --workers=2 "${JOB[@]}" --model=mlp \
    --epochs=40 --listen=127.0.0.1:0 --expect=2 --monitor=127.0.0.1:0 \
    --node-timeout=60
  start_node n1 --node-timeout=60; N1=$NODE
  start_node n2 --node-timeout=60; N2=$NODE
  wait_log coord.log "epoch [1-9]\." 60 || fail "training did not start"
  MPORT=$(grep -o 'monitoring at http://127.0.0.1:[0-9]*' coord.log | sed 's/.*://')
  # The view lists a worker once a poll of its node came back: wait for
  # both (at most 10 s) instead of reading the first view.
  for _ in $(seq 100); do
    cluster_state "$MPORT"
    key cluster.json "/actors/[name=worker 0]/node" >/dev/null 2>&1 \
      && key cluster.json "/actors/[name=worker 1]/node" >/dev/null 2>&1 && break
    sleep 0.1
  done
  for w in 0 1; do
    node=$(key cluster.json "/actors/[name=worker $w]/node") \
      || fail "worker $w not in /api/cluster within 10 s"
    if [ "${node##*:}" = "$N2" ]; then frozen="worker $w"; else alive="worker $w"; fi
  done
  [ -n "${frozen:-}" ] && [ -n "${alive:-}" ] || fail "workers not on both nodes"
  kill -STOP "$N2"
  t0=$(date +%s%3N)
  found=
  for _ in $(seq 100); do
    sleep 0.1
    cluster_state "$MPORT"
    if [ "$(key cluster.json "/actors/[name=$frozen]/state")" = stuck ]; then
      found=1; break
    fi
  done
  [ -n "$found" ] || fail "$frozen was not reported stuck within 10 s"
  echo "stuck after $(($(date +%s%3N) - t0)) ms (limit $(key cluster.json /job/stuck_after_ms) ms)" >&2
  [ "$(key cluster.json "/nodes/[name=${node%:*}:$N2]/state")" = unreachable ] \
    || fail "the frozen node is not unreachable"
  [ "$(key cluster.json "/actors/[name=$alive]/state")" = ok ] \
    || fail "$alive is not ok while the other node hangs"
  kill -CONT "$N2"
  found=
  for _ in $(seq 100); do
    sleep 0.1
    cluster_state "$MPORT"
    [ "$(key cluster.json "/actors/[name=$frozen]/state")" = ok ] && { found=1; break; }
    kill -0 "$COORD" 2>/dev/null || break
  done
  [ -n "$found" ] || fail "$frozen did not recover after SIGCONT"
  wait_for "$COORD" 120 || fail "coordinator exited with status $?"
  [ "$(key coord.json /stop_reason)" = "steps done" ] || fail "job did not complete"
}

scenario_ledger() {
  # Every asynchronous algorithm with 2 workers per node: one node dies
  # mid-run; its workers are lost at once and every planned step is taken
  # (steps_planned = steps_done + steps_lost, none lost).
  for algo in downpour easgd lsgd sgp dssync shadow; do
    start_coordinator "l_$algo" --algo=$algo --workers=4 "${JOB[@]}" \
      --epochs=30 --listen=127.0.0.1:0 --expect=2 --heartbeat=0.1 \
      --node-timeout=1
    start_node "l1_$algo" --workers=2 --heartbeat=0.1 --node-timeout=1; N1=$NODE
    start_node "l2_$algo" --workers=2 --heartbeat=0.1 --node-timeout=1; N2=$NODE
    wait_log "l_$algo.log" "epoch [2-9]\." 60 || fail "$algo: training did not start"
    kill -9 "$N2"
    wait_for "$COORD" 180 || fail "$algo: coordinator exited with status $?"
    f="l_$algo.json"
    [ "$(key "$f" /stop_reason)" = "steps done" ] || fail "$algo: job did not complete"
    [ "$(key "$f" /failures/1/role)" = worker ] || fail "$algo: two lost workers not reported"
    planned=$(key "$f" /steps_planned) done_=$(key "$f" /steps_done) lost=$(key "$f" /steps_lost)
    echo "$algo: planned $planned, done $done_, lost $lost" >&2
    [ "$planned" = $((done_ + lost)) ] || fail "$algo: ledger $planned != $done_ + $lost"
    [ "$lost" = 0 ] || fail "$algo: $lost steps lost"
    [ $(($(key "$f" /steps) + $(key "$f" /lost_worker_steps))) = "$planned" ] \
      || fail "$algo: steps taken do not add up to $planned"
    lostw=
    for n in 0 1; do
      [ "$(key "$f" /nodes/$n/name)" = "$(key "$f" /lost_nodes/0)" ] \
        && lostw=$(key "$f" /nodes/$n/workers | tr -d '[]')
    done
    [ -n "$lostw" ] || fail "$algo: the lost node's workers are not reported"
    for i in 0 1; do
      for to in $(key "$f" /failures/$i/reassigned_to | tr -d '[]' | tr ',' ' '); do
        case ",$lostw," in *",$to,"*) fail "$algo: steps handed to worker $to of the lost node" ;; esac
      done
    done
    wait_for "$N1" 30 || fail "$algo: surviving node exited with status $?"
  done
}

scenario_coordgrace() {
  # The coordinator of a checkpointing sync job is SIGKILLed; its two nodes
  # (--coordinator-grace) wait for a coordinator restarted at the same
  # address with --resume, join it, and the job ends where the
  # uninterrupted one-process run does, bit for bit. Then a node whose
  # coordinator does not come back exits 1 at the end of its grace period,
  # saying so.
  R=(--algo=sync --workers=2 --shards=2 --model=mlp --train-examples=12000
     --epochs=6 --seed="$SEED" --progress=lines --json)
  "$TROUPE" train "${R[@]}" >plain.json 2>plain.log || fail "unkilled run failed"
  start_coordinator coord "${R[@]}" --listen=127.0.0.1:0 --expect=2 \
    --checkpoint-dir=ck --checkpoint-every=20
  start_node n1 --workers=1 --shards=1 --coordinator-grace=60; N1=$NODE
  start_node n2 --workers=1 --shards=1 --coordinator-grace=60; N2=$NODE
  wait_log coord.log "checkpoint at step" 90 || fail "no checkpoint"
  pkill -9 -P "$COORD" 2>/dev/null; kill -9 "$COORD" 2>/dev/null
  wait_log n1.log "waiting up to 60 s" 30 || fail "node 1 did not wait"
  start_coordinator coord2 --resume=ck --listen=127.0.0.1:"$PORT" --expect=2 \
    --json --progress=lines
  wait_for "$COORD" 180 || fail "the restarted coordinator exited with $?"
  wait_for "$N1" 30 || fail "node 1 exited with status $?"
  wait_for "$N2" 30 || fail "node 2 exited with status $?"
  [ "$(key coord2.json /stop_reason)" = "steps done" ] \
    || fail "stop reason $(key coord2.json /stop_reason)"
  [ -n "$(key coord2.json /resumed_from/steps)" ] || fail "not resumed"
  a=$(key plain.json /param_hash) b=$(key coord2.json /param_hash)
  echo "param_hash uninterrupted $a, coordinator killed and restarted $b" >&2
  [ -n "$a" ] && [ "$a" = "$b" ] || fail "the parameters differ"
  # No coordinator comes back: the node gives up after its grace.
  start_coordinator coord3 "${R[@]}" --epochs=50 --listen=127.0.0.1:0 --expect=1
  start_node n3 --workers=2 --coordinator-grace=2; N3=$NODE
  wait_log coord3.log "samples/s" 90 || fail "training did not start (3)"
  pkill -9 -P "$COORD" 2>/dev/null; kill -9 "$COORD" 2>/dev/null
  wait_for "$N3" 60; s=$?
  [ "$s" = 1 ] || fail "the node exited with $s, not 1"
  grep -q "no coordinator came back within the grace period" n3.log \
    || fail "the node does not say why it exits"
}

scenario_stagekill() {
  # Two pipelined replicas of three stages (--stages): each replica's
  # stages go round the two nodes from its head's. One node dies: its
  # replica's head is lost (its steps go to the other), and the other
  # replica's middle stage with it, which is rebuilt (on the coordinator's
  # process, the node after it) while its replica trains on.
  start_coordinator coord --algo=downpour --workers=2 --stages=3 \
    --micro-batches=2 "${JOB[@]}" --model=mlp --epochs="${TROUPE_KILL_EPOCHS:-6}" \
    --listen=127.0.0.1:0 --expect=2 --heartbeat=0.1 --node-timeout=1
  start_node n1 --heartbeat=0.1 --node-timeout=1; N1=$NODE
  start_node n2 --heartbeat=0.1 --node-timeout=1; N2=$NODE
  wait_log coord.log "epoch [1-9]\." 60 || fail "training did not start"
  kill -9 "$N2"
  wait_for "$COORD" 180 || fail "coordinator exited with status $?"
  [ "$(key coord.json /stop_reason)" = "steps done" ] || fail "job did not complete"
  grep -q "pipeline stage 1 of replica [01] was lost" coord.log \
    || fail "no stage loss logged"
  [ "$(key coord.json /pipeline/rebuilds)" -ge 1 ] || fail "no stage rebuilt"
  [ "$(key coord.json /failures/0/role)" = worker ] || fail "the lost head is not reported"
  acc=$(key coord.json /test_accuracy)
  awk -v a="$acc" 'BEGIN { exit !(a >= 0.75) }' || fail "accuracy $acc < 0.75"
  wait_for "$N1" 30 || fail "surviving node exited with status $?"
  echo "PASS (stagekill: accuracy $acc)" >&2
}
