#!/usr/bin/env bash
# Ctrl-C and SIGTERM during troupe train (real processes): the job stops
# cleanly, the JSON (with the interrupted stop reason), the report and the
# saved model are written, the exit status is 128 + the signal, and a
# second signal ends the process at once. Every wait is bounded.
#   interrupt_test.sh TROUPE JSON_GET SCENARIO
# Scenarios: actors (downpour, SIGINT), sgd (SIGTERM), listen (a --listen
# coordinator and its node, SIGINT), twice (a second SIGINT), resume (a
# checkpointing sync job killed, resumed, interrupted, resumed: bit for bit),
# nodes (the same with the roles on nodes, the coordinator killed, the last
# resume in one process), gossip (a checkpointing SGP job interrupted and
# resumed: every step done once, the push-sum mass whole), node (a node
# that takes SIGTERM stays up to 15 s for its coordinator), linger (the
# dashboard kept up after the job by --monitor-linger, closed by Ctrl-C).
# Exit 0 pass, 1 fail.
set -uo pipefail
# Job control: background jobs keep SIGINT (without it bash starts them
# with SIGINT ignored).
set -m

TROUPE=$1
JSON_GET=$2
SCENARIO=$3
WORK=$(mktemp -d /tmp/troupe-interrupt.XXXXXX)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
  if [ "${KEEP:-0}" = 1 ]; then echo "kept $WORK" >&2; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
# shellcheck source=../lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh" # wait_log
cd "$WORK"
SEED=${TROUPE_TEST_SEED:-7}
echo "scenario $SCENARIO, seed $SEED, in $WORK" >&2
# Long enough that only a signal ends it within the test's time.
JOB=(--model=mlp --train-examples=12000 --epochs=200 --seed="$SEED"
     --progress=lines --json)

fail() {
  echo "FAIL ($SCENARIO): $*" >&2
  for f in *.log; do [ -f "$f" ] && { echo "--- $f" >&2; tail -20 "$f" >&2; }; done
  exit 1
}
key() { "$JSON_GET" "$1" "$2"; }

# wait_for PID SECONDS: the process's status (124: it did not end).
wait_for() {
  local pid=$1 limit=$2
  for _ in $(seq $((limit * 10))); do
    kill -0 "$pid" 2>/dev/null || { wait "$pid"; return $?; }
    sleep 0.1
  done
  kill -9 "$pid" 2>/dev/null
  return 124
}
# start NAME ARGS...: troupe train in the background; sets PID once it
# trains (a progress line), at most 120 s.
start() {
  local name=$1
  shift
  "$TROUPE" train "$@" >"$name.json" 2>"$name.log" &
  PID=$!
  PIDS+=("$PID")
}
training() { wait_log "$1.log" "samples/s" 120 || fail "$1 did not train"; }

# plain_sync: the uninterrupted sync job R (set here) in one process, to
# plain.json.
plain_sync() {
  R=(--algo=sync --workers=2 --shards=2 --model=mlp --train-examples=12000
     --epochs=20 --seed="$SEED" --progress=lines --json)
  "$TROUPE" train "${R[@]}" >plain.json 2>plain.log &
  local pid=$!
  PIDS+=("$pid")
  wait_for "$pid" 240 || fail "the uninterrupted run failed"
}

# resume_to_end STEP WHAT: resumes ck in one process to the end (e.json):
# from checkpoint STEP, with plain.json's parameters (bit for bit) and
# samples.
resume_to_end() {
  "$TROUPE" train --resume=ck --json --progress=none >e.json 2>e.log \
    || fail "the final resume (one process) failed"
  [ "$(key e.json /resumed_from/steps)" = "$1" ] \
    || fail "resumed from $(key e.json /resumed_from/steps), not $1"
  local a b
  a=$(key plain.json /param_hash) b=$(key e.json /param_hash)
  echo "param_hash uninterrupted $a, $2 $b" >&2
  [ -n "$a" ] && [ "$a" = "$b" ] || fail "the parameters differ"
  [ "$(key plain.json /samples)" = "$(key e.json /samples)" ] \
    || fail "samples $(key e.json /samples), not $(key plain.json /samples)"
}

# check NAME STATUS SIGNAL: the stopped run's status, JSON and model.
check() {
  local name=$1 status=$2 sig=$3
  [ "$status" = $((128 + $(kill -l "$sig"))) ] \
    || fail "$name exited with status $status, not 128 + $sig"
  [ "$(key "$name.json" /stop_reason)" = "interrupted (SIG$sig)" ] \
    || fail "stop reason $(key "$name.json" /stop_reason)"
  [ -s "$name.safetensors" ] || fail "no model saved"
  [ "$(key "$name.json" /saved_model/0)" = "$name.safetensors" ] \
    || fail "the JSON does not name the saved model"
  "$TROUPE" eval --model="$name.safetensors" >"$name-eval.json" \
    2>"$name-eval.log" || fail "troupe eval failed"
  local a b
  a=$(key "$name.json" /test_accuracy) b=$(key "$name-eval.json" /test_accuracy)
  echo "$name: status $status, test accuracy $a, troupe eval $b" >&2
  [ -n "$a" ] && [ "$a" = "$b" ] || fail "eval says $b, the run $a"
}

# http_get PORT PATH: the body of a GET on 127.0.0.1:PORT (bash's /dev/tcp,
# at most 10 s).
http_get() {
  timeout 10 bash -c 'exec 3<>/dev/tcp/127.0.0.1/'"$1"'
    printf "GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n" "'"$2"'" >&3
    sed "1,/^\r\{0,1\}$/d" <&3'
}

case "$SCENARIO" in
linger)
  # --monitor-linger: the dashboard of a finished job stays up, says the job
  # ended, and a Ctrl-C closes it with the run's own status (0); a number
  # of seconds closes it by itself.
  L=(--algo=downpour --workers=2 --model=logreg --train-examples=3000
     --seed="$SEED" --progress=none --json --monitor=127.0.0.1:0)
  start l "${L[@]}" --monitor-linger=forever
  wait_log l.log "stays at" 120 || fail "the dashboard did not linger"
  port=$(grep -o 'stays at http://127.0.0.1:[0-9]*' l.log | sed 's/.*://')
  [ -n "$port" ] || fail "no port in the lingering line"
  body=$(http_get "$port" /api/cluster)
  echo "after the job: ${body:0:160}" >&2
  echo "$body" | grep -q '"running":false' \
    || fail "the lingering dashboard does not say the job ended"
  steps=$(key l.json /steps)
  echo "$body" | grep -q "\"steps\":$steps[,}]" \
    || fail "the lingering dashboard does not show the job's $steps steps"
  page=$(http_get "$port" /)
  [[ "$page" == *"<html"* ]] || fail "no dashboard page"
  sleep 1
  kill -0 "$PID" 2>/dev/null || fail "the process ended while lingering"
  kill -INT "$PID"
  wait_for "$PID" 20
  status=$?
  [ "$status" = 0 ] || fail "status $status after Ctrl-C on the lingering dashboard"
  grep -q "closing the dashboard" l.log || fail "the Ctrl-C was not explained"
  http_get "$port" /api/cluster >/dev/null 2>&1 && fail "the port still answers"
  start t "${L[@]}" --monitor-linger=1
  wait_for "$PID" 60
  status=$?
  [ "$status" = 0 ] || fail "a 1 s linger ended with status $status"
  grep -q "the dashboard closed" t.log || fail "the 1 s linger did not close"
  ;;
actors)
  start a --algo=downpour --workers=2 "${JOB[@]}" --save=a.safetensors \
    --report=rep
  training a
  kill -INT "$PID"
  wait_for "$PID" 120
  check a $? INT
  [ -s rep/model.safetensors ] || fail "no model in the report"
  [ -s rep/result.json ] || fail "no result in the report"
  cmp -s a.safetensors rep/model.safetensors || fail "two different models"
  ;;
sgd)
  start s --algo=sgd "${JOB[@]}" --save=s.safetensors
  training s
  kill -TERM "$PID"
  wait_for "$PID" 120
  check s $? TERM
  ;;
listen)
  start c --algo=downpour --workers=2 "${JOB[@]}" --save=c.safetensors \
    --listen=127.0.0.1:0 --expect=1
  wait_log c.log "listening on" 60 || fail "the coordinator does not listen"
  port=$(grep -o 'listening on [^ ,]*' c.log | head -1 | sed 's/.*://')
  "$TROUPE" node --join=127.0.0.1:"$port" 2>n.log &
  NODE=$!
  PIDS+=("$NODE")
  training c
  kill -INT "$PID"
  wait_for "$PID" 120
  check c $? INT
  wait_for "$NODE" 60
  node=$?
  [ "$node" = 0 ] || fail "the node exited with status $node"
  ;;
twice)
  # The clean stop takes a while: the final evaluation of a wide
  # convolution (64 channels at 28x28: about 1.5 s here; lenet's took 0.2 s
  # and the second signal often came after it). A second SIGINT within it
  # exits at once. Should the clean stop win the race, the run is repeated
  # (at most 3 times).
  cat >wide.json <<'EOF'
{"name": "wide", "layers": [
  {"type": "conv2d", "out_channels": 64, "kernel": 3, "padding": 1},
  {"type": "relu"}, {"type": "flatten"}, {"type": "dense", "units": "classes"}]}
EOF
  for attempt in 1 2 3; do
    start t --algo=downpour --workers=2 --model=wide.json --lr=0.01 \
      --epochs=200 --seed="$SEED" --progress=lines --json --save=t.safetensors
    training t
    kill -INT "$PID"
    wait_log t.log "stopping the job cleanly" 30 || fail "no first stop"
    kill -INT "$PID" 2>/dev/null
    wait_for "$PID" 60
    status=$?
    # The line of the clean stop's end ("interrupted (SIGINT): test
    # accuracy ...") before the second signal's: the clean stop won (its
    # JSON written), and the second signal only cut the exit short.
    again=$(grep -n "again, exiting at once" t.log | head -1 | cut -d: -f1)
    ended=$(grep -n "interrupted (SIGINT): " t.log | head -1 | cut -d: -f1)
    if [ -n "$again" ] && { [ -z "$ended" ] || [ "$ended" -gt "$again" ]; }; then
      [ "$status" = 130 ] || fail "exited with status $status, not 130"
      [ ! -s t.json ] || fail "the JSON was written after the second signal"
      echo "attempt $attempt: the second SIGINT exited at once" >&2
      exit 0
    fi
    echo "attempt $attempt: the clean stop ended first (status $status)" >&2
  done
  fail "the second SIGINT never came before the clean stop's end"
  ;;
resume)
  # A sync job checkpointing every 20 steps: SIGKILL mid-run (no clean
  # stop: the last complete checkpoint counts), resume, SIGINT the resumed
  # run (it writes a checkpoint as it stops), resume again to the end. The
  # end is the uninterrupted run's, bit for bit (param_hash).
  plain_sync
  start k "${R[@]}" --checkpoint-dir=ck --checkpoint-every=20
  wait_log k.log "checkpoint at step" 120 || fail "no checkpoint written"
  kill -9 "$PID"
  wait_for "$PID" 30
  ls ck | grep -q step- || fail "no checkpoint left after SIGKILL"
  start r --resume=ck --json --progress=lines
  training r
  grep -q "resumed from" r.log || fail "the run did not say it resumed"
  kill -INT "$PID"
  wait_for "$PID" 120
  status=$?
  [ "$status" = 130 ] || fail "the resumed run exited with $status, not 130"
  # The workers stay paused after the stop's checkpoint: it holds the
  # run's last step.
  last=$(key r.json /steps)
  [ -n "$(key r.json /checkpoints/0/steps)" ] \
    || fail "the interrupted run wrote no checkpoint"
  echo "killed once, stopped (and checkpointed) at step $last" >&2
  resume_to_end "$last" "interrupted twice"
  ;;
node)
  # A node that takes SIGTERM stays for its coordinator to end the job (a
  # launcher signals every process at once), at most 15 s, then exits with
  # 143; a second signal ends it at once. Its coordinator never comes here
  # (a port nothing listens on, a long join timeout).
  for second in no yes; do
    "$TROUPE" node --join=127.0.0.1:9 --join-timeout=120 2>n.log &
    PID=$!
    PIDS+=("$PID")
    sleep 1
    start_ms=$(date +%s%3N)
    kill -TERM "$PID"
    wait_log n.log "leaving when the coordinator ends the job (at most 15 s" \
      10 || fail "the node did not say it waits for its coordinator"
    [ "$second" = yes ] && kill -TERM "$PID"
    wait_for "$PID" 30
    status=$?
    took=$(( $(date +%s%3N) - start_ms ))
    echo "node, second signal $second: status $status after $took ms" >&2
    [ "$status" = 143 ] || fail "the node exited with $status, not 143"
    if [ "$second" = no ]; then
      grep -q "did not end within 15 s of the signal: exiting" n.log \
        || fail "the node does not say why it exits"
      [ "$took" -ge 14000 ] || fail "the node left after $took ms, not 15 s"
    else
      grep -q "again, exiting at once" n.log || fail "no line for the second"
      [ "$took" -lt 10000 ] || fail "the second signal took $took ms"
    fi
  done
  ;;
nodes)
  # A sync job whose shards and workers live on two nodes, checkpointing
  # every 20 steps. The coordinator is SIGKILLed (its nodes exit: it is
  # lost); a coordinator resumed with two new nodes is interrupted (SIGINT:
  # a checkpoint as it stops); the last resume runs in one process. The
  # roles' states go between placements: the end is the uninterrupted
  # one-process run's, bit for bit.
  plain_sync
  # coordinator NAME ARGS...: a --listen run with two nodes of one worker and
  # one shard each (NODES: their pids).
  coordinator() {
    local name=$1
    shift
    start "$name" "$@" --listen=127.0.0.1:0 --expect=2
    wait_log "$name.log" "listening on" 60 \
      || fail "$name does not listen"
    local port
    port=$(grep -o 'listening on [^ ,]*' "$name.log" | head -1 | sed 's/.*://')
    NODES=()
    for n in 1 2; do
      "$TROUPE" node --join=127.0.0.1:"$port" --workers=1 --shards=1 \
        2>"$name-node$n.log" &
      NODES+=($!)
      PIDS+=($!)
    done
  }
  coordinator k "${R[@]}" --checkpoint-dir=ck --checkpoint-every=20
  wait_log k.log "checkpoint at step" 120 || fail "no checkpoint written"
  kill -9 "$PID"
  wait_for "$PID" 30
  for n in "${NODES[@]}"; do
    wait_for "$n" 60
    status=$?
    [ "$status" = 1 ] || fail "a node of the killed coordinator exited $status"
  done
  grep -q "lost the coordinator" k-node1.log \
    || fail "the node did not say it lost the coordinator"
  ls ck | grep -q step- || fail "no checkpoint left after SIGKILL"
  coordinator r --resume=ck --json --progress=lines
  training r
  grep -q "resumed from" r.log || fail "the run did not say it resumed"
  kill -INT "$PID"
  wait_for "$PID" 120
  status=$?
  [ "$status" = 130 ] || fail "the resumed run exited with $status, not 130"
  for n in "${NODES[@]}"; do
    wait_for "$n" 60 || fail "a node of the interrupted run exited $?"
  done
  last=$(key r.json /steps)
  [ -n "$(key r.json /checkpoints/0/steps)" ] \
    || fail "the interrupted run wrote no checkpoint"
  [ "$(key r.json /nodes/1/shards)" = "[1]" ] \
    || [ "$(key r.json /nodes/0/shards)" = "[1]" ] \
    || fail "shard 1 was not on a node"
  echo "coordinator killed, resumed on nodes, stopped at step $last" >&2
  resume_to_end "$last" "across placements"
  ;;
gossip)
  # SGP over 4 workers: SIGINT mid-run writes a checkpoint as it stops
  # (every share in flight settled by the pause's markers); the resumed run
  # does the remaining steps, each worker its own, and the weights still
  # add up to one per worker.
  G=(--algo=sgp --workers=4 --model=mlp --train-examples=6000 --epochs=20
     --seed="$SEED" --progress=lines --json --threads=2)
  start g "${G[@]}" --checkpoint-dir=ck --checkpoint-every=100000
  training g
  sleep 1 # mid-run, shares in flight
  kill -INT "$PID"
  wait_for "$PID" 120
  status=$?
  [ "$status" = 130 ] || fail "the SGP run exited with $status, not 130"
  stopped=$(key g.json /checkpoints/0/steps)
  [ -n "$stopped" ] || fail "the interrupted SGP run wrote no checkpoint"
  "$TROUPE" train --resume=ck --json --progress=none >e.json 2>e.log \
    || fail "the SGP resume failed"
  [ "$(key e.json /resumed_from/steps)" = "$stopped" ] \
    || fail "resumed from $(key e.json /resumed_from/steps), not $stopped"
  [ "$(key e.json /stop_reason)" = "steps done" ] || fail "not all steps done"
  [ "$(key e.json /step_ledger/done)" = "$(key e.json /step_ledger/planned)" ] \
    || fail "ledger: $(key e.json /step_ledger/done) steps done of $(key e.json /step_ledger/planned)"
  for w in 0 1 2 3; do
    [ "$(key e.json /worker_stats/$w/steps)" = "$(key e.json /steps_per_worker)" ] \
      || fail "worker $w did $(key e.json /worker_stats/$w/steps) steps"
  done
  w=$(key e.json /sgp/weight_sum)
  echo "stopped at step $stopped, resumed: weights sum to $w" >&2
  awk -v w="$w" 'BEGIN { exit !(w > 3.999999 && w < 4.000001) }' \
    || fail "the weights sum to $w, not 4"
  ;;
*)
  echo "unknown scenario $SCENARIO" >&2
  exit 1
  ;;
esac
echo "PASS ($SCENARIO)" >&2
