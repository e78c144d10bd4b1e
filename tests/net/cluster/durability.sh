# Scenarios of tests/net/cluster_test.sh, which sources this file:
# lost shards restored, replicas, late joins, L-BFGS re-issues.
# Each uses the globals and helpers the entry point defines.
# shellcheck shell=bash

scenario_shardrestore() {
  # A checkpointing job whose two shards live on one node: that node is
  # SIGKILLed after a checkpoint. Both shards come back in the coordinator's
  # process from the checkpoint, the workers are pointed at them, and the
  # job finishes every step. The pushes lost (applied by the dead shards
  # since the checkpoint, or sent to them) are reported, and every push is
  # accounted for: the pushes the workers sent = a shard's applied pushes +
  # lost + rejected (computed on parameters newer than the checkpoint's); a
  # duplicate is a push sent again, counted once. The accuracy is within
  # 0.5 point of the unkilled run's. Downpour (a push per step), EASGD
  # (the center's shards: an elastic push every --tau steps), sync (a
  # push per step; the restored shards move to the job's round, so a round
  # is lost for both workers or for neither, and every shard ends at the
  # job's last round) and ShadowSync by S-EASGD (the center's shards, to
  # which the workers' node's syncer pushes once a round: the syncer is
  # pointed at the restored shards).
  for algo in ${SHARDRESTORE_ALGOS:-downpour easgd sync shadow}; do
    R=(--algo=$algo --workers=2 --shards=2 "${JOB[@]}" --epochs=30)
    [ "$algo" = shadow ] && R+=(--shadow=easgd)
    rm -rf ck
    kill_shard_node "checkpoint at step" --checkpoint-dir=ck \
      --checkpoint-every=50
    grep -q "restored here from the checkpoint" coord.log \
      || fail "$algo: the coordinator did not say it restored the shards"
    # A checkpoint under way when the node died does not wait on the lost
    # shards until the request timeout (their node, reached through the
    # coordinator's, never answers): the restoration settles its flushes.
    grep -q "flush: system_error(request_timeout)" coord.log \
      && fail "$algo: a flush waited on a lost shard until the timeout"
    if [ "$algo" = shadow ]; then
      sent=$(key coord.json /shadow/syncers/0/pushes)
      grep -q "shard [01] restored, rounds go on" n1.log \
        || fail "shadow: the syncer was not pointed at the restored shards"
    else
      sent=$(( $(key coord.json /worker_stats/0/pushes) \
               + $(key coord.json /worker_stats/1/pushes) ))
    fi
    [ "$algo" = easgd ] || [ "$algo" = shadow ] || [ "$sent" = "$steps" ] \
      || fail "downpour: $sent pushes for $steps steps"
    for i in 0 1; do
      [ "$(key coord.json /restored_shards/$i/shard)" = "$i" ] \
        || fail "$algo: shard $i not reported restored"
      lost=$(key coord.json /restored_shards/$i/lost_pushes)
      at=$(key coord.json /restored_shards/$i/steps_at_loss)
      ck=$(key coord.json /restored_shards/$i/checkpoint_steps)
      version=$(key coord.json /shard_stats/$i/version)
      rejected=$(key coord.json /shard_stats/$i/rejected)
      dup=$(key coord.json /shard_stats/$i/duplicates)
      applied=$version
      [ "$algo" = sync ] && applied=$(key coord.json /shard_stats/$i/applied)
      echo "$algo shard $i: checkpoint at step $ck, lost at step $at, $lost" \
        "pushes lost, $applied applied of $sent sent (version $version)" >&2
      [ -n "$lost" ] || fail "$algo shard $i: no count of the pushes lost"
      # (sync: the round under way at the loss, counted in the steps, is
      # pushed again to the restored shard and not lost.)
      resent=0
      [ "$algo" = sync ] && resent=2
      [ "$algo" = easgd ] || [ "$algo" = shadow ] \
        || [ "$lost" -ge $((at - ck - resent)) ] \
        || fail "shard $i: $lost pushes lost, fewer than the" \
                "$((at - ck - resent)) steps between the checkpoint and the loss"
      if [ "$algo" = sync ]; then
        [ "$version" = $((steps / 2)) ] \
          || fail "sync shard $i: at round $version, the job's last is" \
                  "$((steps / 2))"
        [ $((lost % 2)) = 0 ] \
          || fail "sync shard $i: $lost pushes lost, not whole rounds"
      fi
      [ $((applied + lost + rejected)) = "$sent" ] \
        || fail "$algo shard $i: $applied applied + $lost lost + $rejected" \
                "rejected != $sent pushes ($dup duplicates)"
    done
    within_half_point
  done
}

scenario_replicas() {
  # --shard-replicas=1: the node holding both primaries is SIGKILLed
  # mid-run; their hot backups (on the workers' node, the only other one)
  # take over at once, the workers send their recent pushes again, and no
  # update is lost: each shard applied or rejected every push exactly once
  # (version + rejected = the pushes sent: downpour one per step, EASGD one
  # elastic difference per --tau steps), lost_pushes is 0, and the accuracy
  # is within 0.5 point of the unkilled run's. No checkpoint is involved.
  # The shards then get new backups, in step with them at the end.
  for algo in ${REPLICAS_ALGOS:-downpour easgd}; do
    R=(--algo=$algo --workers=2 --shards=2 "${JOB[@]}" --epochs=30)
    kill_shard_node "test_acc" --shard-replicas=1
    grep -q "its hot backup on .* took over" coord.log \
      || fail "$algo: the coordinator did not say a backup took over"
    sent=$(( $(key coord.json /worker_stats/0/pushes) \
             + $(key coord.json /worker_stats/1/pushes) ))
    [ "$algo" = easgd ] || [ "$sent" = "$steps" ] \
      || fail "downpour: $sent pushes for $steps steps"
    for i in 0 1; do
      [ "$(key coord.json /restored_shards/$i/from)" = replica ] \
        || fail "$algo: shard $i not reported taken over by its backup"
      [ "$(key coord.json /replicas/$i/took_over)" = true ] \
        || fail "$algo: replicas/$i does not say its backup took over"
      # A new backup (in the coordinator's process, the only place left)
      # was attached to the new primary and ends with its parameters.
      [ "$(key coord.json /replicas/$i/same_parameters)" = true ] \
        || fail "$algo: shard $i has no new backup in step with it"
      lost=$(key coord.json /restored_shards/$i/lost_pushes)
      at=$(key coord.json /restored_shards/$i/steps_at_loss)
      version=$(key coord.json /shard_stats/$i/version)
      rejected=$(key coord.json /shard_stats/$i/rejected)
      dup=$(key coord.json /shard_stats/$i/duplicates)
      echo "$algo shard $i: primary lost at step $at, $lost pushes lost," \
        "$version applied + $rejected rejected of $sent, $dup sent again" >&2
      [ "$lost" = 0 ] || fail "$algo shard $i: $lost pushes lost"
      [ $((version + rejected)) = "$sent" ] \
        || fail "$algo shard $i: $version applied + $rejected rejected != $sent"
    done
    within_half_point
  done
  R=(--algo=downpour --workers=2 --shards=2 "${JOB[@]}" --epochs=30)
  # Unkilled, a backup ends with its primary's parameters, bit for bit.
  start_coordinator coord2 "${R[@]}" --epochs=3 --listen=127.0.0.1:0 \
    --expect=2 --shard-replicas=1
  start_node n3 --workers=2 --shards=0; N3=$NODE
  start_node n4 --workers=0 --shards=2; N4=$NODE
  wait_for "$COORD" 120 || fail "coordinator 2 exited with status $?"
  for i in 0 1; do
    [ "$(key coord2.json /replicas/$i/same_parameters)" = true ] \
      || fail "shard $i's backup does not hold its primary's parameters"
  done
  # Both nodes lost, the second while the shards' new backups (in the
  # coordinator's process) are usually still being attached: the job ends
  # with status 1 and a report whose ledger adds up, and the process exits
  # (it used to wait forever on the unattached backups).
  start_coordinator coord3 "${R[@]}" --listen=127.0.0.1:0 --expect=2 \
    --shard-replicas=1
  start_node n5 --workers=2 --shards=0; N5=$NODE
  start_node n6 --workers=0 --shards=2; N6=$NODE
  wait_log coord3.log "test_acc" 90 || fail "job 3 did not train"
  kill -9 "$N6"
  wait_log coord3.log "took over" 30 || fail "no backup took over in job 3"
  kill -9 "$N5"
  wait_for "$COORD" 60
  rc=$?
  [ "$rc" = 1 ] || fail "both nodes lost: coordinator status $rc, not 1"
  # (A backup attached in time takes over here and the job ends with its
  # workers instead.)
  case $(key coord3.json /stop_reason) in
  "shard lost" | "workers lost") ;;
  *) fail "both nodes lost: stop reason $(key coord3.json /stop_reason)" ;;
  esac
  planned=$(key coord3.json /steps_planned)
  done_=$(key coord3.json /steps_done)
  lost=$(key coord3.json /steps_lost)
  [ $((done_ + lost)) = "$planned" ] \
    || fail "both nodes lost: $done_ done + $lost lost != $planned planned"
  # The epochs count the lost workers' steps (no worker reported at the end).
  epochs=$(key coord3.json /epochs)
  awk -v e="$epochs" -v d="$done_" 'BEGIN { exit !(d > 0 && e > 0) }' \
    || fail "both nodes lost: $epochs epochs for $done_ steps done"
}

scenario_join() {
  # Elastic scale-up: a downpour job (20 epochs: long enough for a late
  # node to set up on a loaded machine) starts on one node of 2 workers; a
  # second node joins mid-run. Its workers (ids 2 and 3) take steps and
  # examples the live workers cede, the job completes with every planned
  # step taken, and the JSON and the monitor show the new node. A job whose
  # algorithm is not elastic (sync) refuses a late node, which exits 1.
  start_coordinator coord --algo=downpour --workers=2 "${JOB[@]}" --model=mlp \
    --epochs=20 --listen=127.0.0.1:0 --expect=1 --monitor=127.0.0.1:0
  start_node n1 --workers=2; N1=$NODE
  wait_log coord.log "epoch [1-9]\." 60 || fail "training did not start"
  start_node n2 --workers=2; N2=$NODE
  wait_log coord.log "joined the running job" 60 || fail "node 2 did not join"
  MPORT=$(grep -o 'monitoring at http://127.0.0.1:[0-9]*' coord.log | sed 's/.*://')
  for i in $(seq 20); do
    cluster_state "$MPORT"
    n=$(key cluster.json "/actors/[name=worker 3]/node" 2>/dev/null)
    [ -n "$n" ] && break
    sleep 0.25
  done
  [ "${n##*:}" = "$N2" ] || fail "the monitor does not show worker 3 on node 2 ($n)"
  j=$(key cluster.json /job/joined/0/node)
  [ "${j##*:}" = "$N2" ] || fail "the monitor's job does not list the joined node ($j)"
  wait_for "$COORD" 180 || fail "coordinator exited with status $?"
  wait_for "$N1" 30 || fail "node 1 exited with status $?"
  wait_for "$N2" 30 || fail "the joined node exited with status $?"
  [ "$(key coord.json /stop_reason)" = "steps done" ] || fail "job did not complete"
  j=$(key coord.json /joined/0/node)
  [ "${j##*:}" = "$N2" ] || fail "joined node $j reported, not pid $N2"
  [ "$(key coord.json /joined/0/workers)" = "[2,3]" ] || fail "joined workers $(key coord.json /joined/0/workers)"
  [ "$(key coord.json /nodes/1/workers)" = "[2,3]" ] || fail "the joined node is not in nodes"
  planned=$(key coord.json /steps_planned) done_=$(key coord.json /steps_done) lost=$(key coord.json /steps_lost)
  echo "join: planned $planned, done $done_, lost $lost, at step $(key coord.json /joined/0/steps_at_join), ceded $(key coord.json /joined/0/steps_ceded) steps and $(key coord.json /joined/0/examples_ceded) examples" >&2
  [ "$planned" = $((2 * $(key coord.json /steps_per_worker))) ] || fail "planned $planned"
  [ "$planned" = $((done_ + lost)) ] || fail "ledger $planned != $done_ + $lost"
  [ "$lost" = 0 ] || fail "$lost steps lost"
  [ "$(key coord.json /steps)" = "$planned" ] || fail "steps $(key coord.json /steps) != $planned"
  for w in 2 3; do
    # worker_stats is sorted by worker id
    [ "$(key coord.json /worker_stats/$w/worker)" = "$w" ] || fail "no stats of worker $w"
    s=$(key coord.json /worker_stats/$w/steps)
    [ "${s:-0}" -gt 0 ] || fail "joined worker $w took no step"
  done
  [ "$(key coord.json /joined/0/examples_ceded)" -gt 0 ] || fail "no example ceded"
  "$TROUPE" train --algo=downpour --workers=2 "${JOB[@]}" --model=mlp \
    --epochs=8 >one.json 2>one.log || fail "the run without a join failed"
  a=$(key coord.json /test_accuracy) b=$(key one.json /test_accuracy)
  echo "accuracy with the join $a, without $b" >&2
  awk -v a="$a" -v b="$b" 'BEGIN { exit !(a >= b - 0.03) }' || fail "accuracy $a, without the join $b"
  # EASGD is elastic too: the joining node's workers start from the center
  # at their first exchange and move it like the others.
  start_coordinator ea --algo=easgd --workers=2 "${JOB[@]}" --model=mlp \
    --epochs=40 \
    --listen=127.0.0.1:0 --expect=1
  start_node e1 --workers=2; E1=$NODE
  wait_log ea.log "epoch [1-9]\." 60 || fail "easgd: training did not start"
  start_node e2 --workers=2; E2=$NODE
  wait_log ea.log "joined the running job" 60 || fail "easgd: node 2 did not join"
  wait_for "$COORD" 180 || fail "easgd: coordinator exited with status $?"
  wait_for "$E1" 30 || fail "easgd: node 1 exited with status $?"
  wait_for "$E2" 30 || fail "easgd: the joined node exited with status $?"
  [ "$(key ea.json /stop_reason)" = "steps done" ] || fail "easgd: job did not complete"
  [ "$(key ea.json /joined/0/workers)" = "[2,3]" ] || fail "easgd: joined workers $(key ea.json /joined/0/workers)"
  planned=$(key ea.json /steps_planned) done_=$(key ea.json /steps_done) lost=$(key ea.json /steps_lost)
  [ "$planned" = $((done_ + lost)) ] && [ "$lost" = 0 ] \
    || fail "easgd: ledger $planned != $done_ + $lost"
  s=$(key ea.json /worker_stats/3/steps)
  [ "${s:-0}" -gt 0 ] || fail "easgd: joined worker 3 took no step"
  a=$(key ea.json /test_accuracy)
  echo "easgd with a join: accuracy $a, ceded $(key ea.json /joined/0/steps_ceded) steps" >&2
  awk -v a="$a" 'BEGIN { exit !(a >= 0.8) }' || fail "easgd: accuracy $a < 0.8"
  # Not elastic: refused at once, naming the algorithm, on both sides.
  start_coordinator sync --algo=sync --workers=1 "${JOB[@]}" --epochs=60 \
    --listen=127.0.0.1:0 --expect=1
  start_node s1 --workers=1
  wait_log sync.log "epoch [1-9]" 60 || fail "sync: training did not start"
  start_node s2 --workers=1; S2=$NODE
  wait_for "$S2" 60; s=$?
  [ "$s" = 1 ] || fail "the refused node exited with status $s"
  grep -q "refused this node: the job has started, and its algorithm, sync, does not take nodes" s2.log \
    || fail "the refusal does not name the algorithm: $(tail -2 s2.log)"
  grep -q "refused node .*sync, does not take" sync.log || fail "the coordinator does not log the refusal"
}

scenario_lbfgs() {
  # Sandblaster L-BFGS over two nodes of 2 workers, the shards in the
  # coordinator's process. One node dies mid-run: its workers' portions are
  # re-issued, and the run ends at exactly the objective of the same job in
  # one process (a portion's sums do not depend on who computes them, the
  # shards add them in portion order).
  LB=(--algo=lbfgs --model=mlp --train-examples=3000 --seed="$SEED"
      --workers=4 --shards=2 --portions=32 --max-steps=15 --progress=lines
      --json --request-timeout=20)
  start_coordinator coord "${LB[@]}" --listen=127.0.0.1:0 --expect=2 \
    --monitor=127.0.0.1:0
  start_node n1 --workers=2; N1=$NODE
  start_node n2 --workers=2; N2=$NODE
  wait_log coord.log "epoch [2-9]\." 90 || fail "training did not start"
  # The monitor lists the driver, the shards and every node's workers.
  MPORT=$(grep -o 'monitoring at http://127.0.0.1:[0-9]*' coord.log | sed 's/.*://')
  # Each worker's first portion shows once it was done and its probe
  # published (a worker slow to start on a loaded machine is later): polled
  # until every worker shows one, for at most 10 s.
  portions() {
    for w in 0 1 2 3; do
      n=$(key cluster.json "/actors/[name=lbfgs worker $w]/gauges/portions" 2>/dev/null)
      [ "${n:-0}" != 0 ] || return 1
    done
  }
  for i in $(seq 40); do
    cluster_state "$MPORT"
    portions && break
    sleep 0.25
  done
  for w in 0 1 2 3; do
    n=$(key cluster.json "/actors/[name=lbfgs worker $w]/gauges/portions" 2>/dev/null)
    [ "${n:-0}" != 0 ] || fail "the monitor shows no portions of worker $w"
  done
  key cluster.json "/actors/[name=lbfgs driver]/gauges/objective" >/dev/null \
    || fail "the monitor shows no objective"
  n=$(key cluster.json "/actors/[name=lbfgs shard 1]/received/push")
  [ "${n:-0}" -gt 0 ] || fail "the monitor shows no portion sums at shard 1"
  kill -9 "$N2"
  wait_for "$COORD" 180 || fail "coordinator exited with status $?"
  wait_for "$N1" 30 || fail "surviving node exited with status $?"
  [ "$(key coord.json /stop_reason)" = "iteration limit (15) reached" ] \
    || fail "job did not complete: $(key coord.json /stop_reason)"
  [ "$(key coord.json /lost_workers)" = 2 ] || fail "2 lost workers not reported"
  "$TROUPE" train "${LB[@]}" >one.json 2>one.log || fail "one-process run failed"
  a=$(key coord.json /objective) b=$(key one.json /objective)
  echo "objective distributed (a node killed) $a, one process $b" >&2
  [ -n "$a" ] && [ "$a" = "$b" ] || fail "objectives differ: $a vs $b"
  # The node holding the shards dies: the run ends at once with an error
  # naming the lost shard.
  start_coordinator coord2 "${LB[@]}" --max-steps=1000 \
    --listen=127.0.0.1:0 --expect=1
  start_node n3 --workers=4 --shards=2; N3=$NODE
  wait_log coord2.log "epoch [1-9]\." 90 || fail "training did not start (2)"
  kill -9 "$N3"
  wait_for "$COORD" 60
  status=$?
  [ "$status" = 1 ] || fail "coordinator exited with status $status, not 1"
  key coord2.json /error | grep -q "shard [01] (node .*) was lost" \
    || fail "no error naming the lost shard: $(key coord2.json /error)"
  # Checkpointing, the node holding the shards dies after a checkpoint: the
  # shards come back in the driver's process, every shard and the driver go
  # back to the checkpoint, and the run ends at exactly the objective of the
  # one-process run (the iterations since the checkpoint are made again).
  rm -rf ck
  start_coordinator coord3 "${LB[@]}" --listen=127.0.0.1:0 --expect=2 \
    --checkpoint-dir=ck --checkpoint-every=3
  start_node n4 --workers=4; N4=$NODE
  start_node n5 --workers=0 --shards=2; N5=$NODE
  wait_log coord3.log "lbfgs: checkpoint at iteration" 90 \
    || fail "no checkpoint (3)"
  # A pass or two later (the next checkpoint is 3 iterations away).
  wait_log coord3.log "epoch \([6-9]\|1[0-9]\)\." 60 || fail "no pass (3)"
  kill -9 "$N5"
  wait_for "$COORD" 180 || fail "coordinator exited with status $? (3)"
  wait_for "$N4" 30 || fail "the workers' node exited with status $? (3)"
  [ "$(key coord3.json /stop_reason)" = "iteration limit (15) reached" ] \
    || fail "job did not complete (3): $(key coord3.json /stop_reason)"
  [ "$(key coord3.json /lost_workers)" = 0 ] || fail "a worker was lost (3)"
  for i in 0 1; do
    key coord3.json /restored_shards/$i/shard >/dev/null \
      || fail "shard $i not reported restored"
  done
  a=$(key coord3.json /objective)
  echo "objective with the shards' node killed $a, one process $b" \
    "($(key coord3.json /restored_shards/0/iteration_at_loss) -> " \
    "$(key coord3.json /restored_shards/0/checkpoint_iteration))" >&2
  [ -n "$a" ] && [ "$a" = "$b" ] || fail "objectives differ (3): $a vs $b"
  [ "$(key coord3.json /param_hash)" = "$(key one.json /param_hash)" ] \
    || fail "parameters differ from the one-process run's (3)"
}
