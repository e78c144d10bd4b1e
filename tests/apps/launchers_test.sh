#!/usr/bin/env bash
# troupe jobs started by real cluster launchers on this host, every process
# with the same command line (troupe launch --launcher=...):
#   slurm  a one-host Slurm (Debian's slurm-wlm: munged, slurmctld and
#          slurmd started here with their own configuration, ports and
#          files; nothing of the machine's is touched) with a partition of
#          four task slots: deploy/slurm/troupe.sbatch submitted with sbatch
#          reaches its target with 3 tasks; under srun a killed task is a
#          lost node the job survives; scancel (SIGTERM) ends a job with its
#          JSON, report and model written.
#   mpi    mpirun -np 3 (Debian's openmpi-bin) reaches the target; with
#          --enable-recovery, one rank killed mid-run is survived.
#   restart  rank 0 of three (by flags) killed and started again with the
#          same command, as a restarted pod: --auto-resume and the nodes'
#          --coordinator-grace end the job bit for bit as if uninterrupted.
# Skipped (77) without the launcher's programs or without root (the Slurm
# daemons run as root).
#   launchers_test.sh TROUPE JSON_GET SOURCE_DIR SCENARIO
set -uo pipefail

TROUPE=$1
JSON_GET=$2
SOURCE_DIR=$3
SCENARIO=$4
WORK=$(mktemp -d /tmp/troupe-launchers.XXXXXX)
DAEMONS=()
cleanup() {
  for p in "${DAEMONS[@]}"; do kill -9 "$p" 2>/dev/null; done
  # Anything of this test's still running (a task of a failed check).
  pkill -9 -f "$WORK" 2>/dev/null
  if [ "${KEEP:-0}" = 1 ]; then echo "kept $WORK" >&2; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
# shellcheck source=../lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh" # wait_log
cd "$WORK"
SEED=${TROUPE_TEST_SEED:-7}
echo "scenario $SCENARIO, seed $SEED, in $WORK" >&2
JOB=(--model=logreg --train-examples=12000 --seed="$SEED" --progress=lines
     --json --request-timeout=20)
# The troupe the tasks run: a path inside $WORK, so that cleanup finds them.
ln -s "$TROUPE" "$WORK/troupe"
T=$WORK/troupe

fail() {
  echo "FAIL ($SCENARIO): $*" >&2
  for f in *.log *.err; do
    [ -f "$f" ] && { echo "--- $f" >&2; tail -25 "$f" >&2; }
  done
  exit 1
}
skip() { echo "SKIP ($SCENARIO): $*" >&2; exit 77; }
key() { "$JSON_GET" "$1" "$2"; }
# The pid of the troupe process whose environment has NAME=VALUE.
pid_with() {
  for p in $(pgrep -f "$T launch"); do
    tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "$1" \
      && { echo "$p"; return 0; }
  done
  return 1
}
# check_result FILE LOST [MIN]: the JSON result (FILE's last line) reached
# the target (or accuracy MIN), with a node lost (LOST 1) or none (0).
check_result() {
  tail -1 "$1" >result.json
  case $(key result.json /stop_reason) in
  "steps done" | "target accuracy") ;;
  *) fail "$1: stop reason $(key result.json /stop_reason)" ;;
  esac
  local acc
  acc=$(key result.json /test_accuracy)
  if [ -z "${3:-}" ]; then
    [ "$(key result.json /reached_target)" = true ] \
      || fail "$1: target not reached ($acc)"
  else
    awk -v a="$acc" -v m="$3" 'BEGIN { exit !(a >= m) }' \
      || fail "$1: accuracy $acc < $3"
  fi
  [ "$(key result.json /nodes/1/workers/0)" != "" ] \
    || fail "$1: the second node hosted no worker"
  local lost
  lost=$(key result.json /lost_nodes/0)
  if [ "$2" = 0 ]; then
    [ -z "$lost" ] || fail "$1: node $lost lost"
  else
    [ -n "$lost" ] || fail "$1: no lost node reported"
  fi
  echo "$1: accuracy $acc, lost: ${lost:-none}" >&2
}

free_port() {
  local p
  for _ in $(seq 50); do
    p=$((20000 + RANDOM % 20000))
    ss -ltn 2>/dev/null | grep -q ":$p " || { echo "$p"; return; }
  done
  echo 0
}

start_slurm() {
  for c in munged slurmctld slurmd srun sbatch scancel sinfo squeue; do
    command -v "$c" >/dev/null || skip "no $c (Debian: slurm-wlm, munge)"
  done
  [ "$(id -u)" = 0 ] || skip "the Slurm daemons run as root here"
  mkdir -p slurm/state slurm/spool
  dd if=/dev/urandom of=slurm/munge.key bs=1024 count=1 status=none
  chmod 400 slurm/munge.key
  munged --key-file="$WORK/slurm/munge.key" --socket="$WORK/slurm/munge.sock" \
    --pid-file="$WORK/slurm/munged.pid" --log-file="$WORK/slurm/munged.log" \
    --seed-file="$WORK/slurm/munged.seed" --force \
    || fail "munged did not start"
  DAEMONS+=("$(cat slurm/munged.pid)")
  local ctld slurmd_port
  ctld=$(free_port)
  slurmd_port=$(free_port)
  # One node, "localhost" (127.0.0.1): the tasks dial the coordinator by the
  # step's first host name. Four task slots whatever the cores.
  cat >slurm/slurm.conf <<CONF
ClusterName=troupetest
SlurmctldHost=localhost(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$ctld
SlurmdPort=$slurmd_port
AuthType=auth/munge
AuthInfo=socket=$WORK/slurm/munge.sock
CredType=cred/munge
StateSaveLocation=$WORK/slurm/state
SlurmdSpoolDir=$WORK/slurm/spool
SlurmctldPidFile=$WORK/slurm/slurmctld.pid
SlurmdPidFile=$WORK/slurm/slurmd.pid
SlurmctldLogFile=$WORK/slurm/slurmctld.log
SlurmdLogFile=$WORK/slurm/slurmd.log
ProctrackType=proctrack/pgid
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SwitchType=switch/none
MpiDefault=none
ReturnToService=2
KillWait=30
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
NodeName=localhost NodeAddr=127.0.0.1 CPUs=4 State=UNKNOWN
PartitionName=troupe Nodes=localhost Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
CONF
  export SLURM_CONF=$WORK/slurm/slurm.conf
  slurmctld -D -i -f "$SLURM_CONF" >slurm/ctld.out 2>&1 &
  DAEMONS+=($!)
  slurmd -D -f "$SLURM_CONF" -N localhost >slurm/d.out 2>&1 &
  DAEMONS+=($!)
  for _ in $(seq 300); do
    timeout 5 sinfo -h -o %t 2>/dev/null | grep -qx idle && return 0
    sleep 0.1
  done
  tail -5 slurm/*.out slurm/*.log >&2
  fail "the one-host Slurm did not come up within 30 s"
}

scenario_slurm() {
  start_slurm
  head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >token
  chmod 600 token
  # 1. The example batch script, 3 tasks, to the target.
  TROUPE=$T TROUPE_RUN=$WORK/run1 TROUPE_TOKEN_FILE=$WORK/token \
    timeout 200 sbatch --wait --ntasks=3 --cpus-per-task=1 --output="$WORK/batch.out" \
    --error="$WORK/batch.log" "$SOURCE_DIR/deploy/slurm/troupe.sbatch" \
    "${JOB[@]}" --epochs=10 --target-accuracy=0.82 >sbatch.log 2>&1 || fail "sbatch --wait failed"
  check_result batch.out 0
  # Rank 0 coordinates and hosts the third worker itself.
  [ -z "$(key result.json /nodes/2/name)" ] && [ "$(key result.json /workers)" = 3 ] \
    || fail "batch: 3 tasks, 3 workers: not 2 nodes and the coordinator"
  [ -s run1/model.safetensors ] || fail "batch: no model in the report"
  grep -q "rank 0 of 3 (slurm): the coordinator" batch.log \
    || fail "batch: rank 0 did not say it coordinates"
  # 2. srun, the task of rank 2 SIGKILLed mid-run: a lost node, survived.
  timeout 200 srun --kill-on-bad-exit=0 -n 3 --output="$WORK/kill.%t.out" \
    --error="$WORK/kill.%t.log" "$T" launch --launcher=slurm \
    --algo=downpour --workers=3 "${JOB[@]}" --model=mlp --epochs=20 \
    --heartbeat=0.1 --node-timeout=1 2>srun.log &
  local srun_pid=$!
  wait_log kill.0.log "epoch [2-9]\." 90 || fail "kill: training did not start"
  local victim
  victim=$(pid_with SLURM_PROCID=2) || fail "kill: no task of rank 2"
  kill -9 "$victim"
  wait "$srun_pid"
  echo "srun exited with $? (a task was killed)" >&2
  check_result kill.0.out 1 0.8
  # 3. scancel: SIGTERM to every task; rank 0 writes its JSON, report and
  # model before Slurm's KillWait.
  timeout 200 srun -n 3 -J troupe-cancel --output="$WORK/cancel.%t.out" \
    --error="$WORK/cancel.%t.log" "$T" launch --launcher=slurm \
    --algo=downpour --workers=3 "${JOB[@]}" --model=mlp --epochs=200 \
    --report="$WORK/rep" --save="$WORK/cancel.safetensors" 2>srun.log &
  srun_pid=$!
  wait_log cancel.0.log "epoch [1-9]\." 90 || fail "cancel: no training"
  local job
  job=$(squeue -h -n troupe-cancel -o %A | head -1)
  [ -n "$job" ] || fail "cancel: no job in squeue"
  scancel "$job"
  for _ in $(seq 600); do
    kill -0 "$srun_pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -0 "$srun_pid" 2>/dev/null && fail "cancel: srun still runs 60 s later"
  tail -1 cancel.0.out >cancel.json
  [ "$(key cancel.json /stop_reason)" = "interrupted (SIGTERM)" ] \
    || fail "cancel: stop reason $(key cancel.json /stop_reason)"
  [ -s cancel.safetensors ] || fail "cancel: no model written"
  [ -s rep/result.json ] || fail "cancel: no report written"
  "$T" eval --model=cancel.safetensors --json >eval.json 2>eval.log \
    || fail "cancel: the saved model does not evaluate"
  echo "cancelled job: accuracy $(key cancel.json /test_accuracy), saved" \
    "model $(key eval.json /test_accuracy)" >&2
}

scenario_mpi() {
  command -v mpirun >/dev/null || skip "no mpirun (Debian: openmpi-bin)"
  mpirun --version 2>&1 | grep -q "Open MPI" || skip "mpirun is not Open MPI's"
  local MPI=(mpirun --allow-run-as-root --oversubscribe --enable-recovery)
  # 1. Three ranks to the target.
  timeout 200 "${MPI[@]}" -np 3 "$T" launch --launcher=mpi --algo=downpour \
    --workers=3 "${JOB[@]}" --epochs=10 --target-accuracy=0.82 >clean.out \
    2>clean.log || fail "mpirun exited with $?"
  check_result clean.out 0
  # 2. --enable-recovery: a rank that dies does not abort the others.
  timeout 200 mpirun --allow-run-as-root --oversubscribe --enable-recovery \
    --output-filename "$WORK/mpi" -np 3 "$T" launch --launcher=mpi \
    --algo=downpour --workers=3 "${JOB[@]}" --model=mlp --epochs=20 \
    --heartbeat=0.1 --node-timeout=1 >mpirun.out 2>mpirun.log &
  local mpi_pid=$!
  local log0=$WORK/mpi/1/rank.0/stderr
  wait_log "$log0" "epoch [2-9]\." 90 || fail "mpi: training did not start"
  local victim
  victim=$(pid_with OMPI_COMM_WORLD_RANK=2) || fail "mpi: no rank 2"
  kill -9 "$victim"
  wait "$mpi_pid"
  echo "mpirun exited with $?" >&2
  cp "$WORK/mpi/1/rank.0/stdout" mpi.out
  cp "$log0" rank0.log
  check_result mpi.out 1 0.8
  grep -q "rank 0 of 3 (open-mpi): the coordinator, on 0.0.0.0" rank0.log \
    || fail "mpi: rank 0 did not coordinate"
}

scenario_restart() {
  # What a restarted pod does (deploy/kubernetes): three ranks by flags
  # alone, a checkpointing sync job; rank 0 is SIGKILLed and started again
  # with the same command: --auto-resume continues the checkpoint, the
  # nodes (--coordinator-grace) join it again, and the job ends where the
  # uninterrupted one-process run does, bit for bit.
  local R=(--algo=sync --workers=3 --model=mlp --train-examples=12000
           --epochs=6 --seed="$SEED" --progress=lines --json)
  "$T" train "${R[@]}" >plain.json 2>plain.log || fail "unkilled run failed"
  local port
  port=$(free_port)
  local L=(launch --launcher=flags --world-size=3
           --coordinator=127.0.0.1:"$port" --auto-resume
           --checkpoint-dir="$WORK/ck" --checkpoint-every=20
           --coordinator-grace=60 "${R[@]}")
  "$T" "${L[@]}" --rank=1 2>n1.log &
  local n1=$!
  "$T" "${L[@]}" --rank=2 2>n2.log &
  local n2=$!
  "$T" "${L[@]}" --rank=0 >r0.json 2>r0.log &
  local r0=$!
  wait_log r0.log "checkpoint at step" 90 || fail "no checkpoint"
  grep -q "no complete checkpoint in $WORK/ck: starting the job" r0.log \
    || fail "the first rank 0 did not say it starts the job"
  kill -9 "$r0"
  wait_log n1.log "waiting up to 60 s" 30 || fail "rank 1 did not wait"
  timeout 180 "$T" "${L[@]}" --rank=0 >r0b.json 2>r0b.log \
    || fail "the restarted rank 0 exited with $?"
  grep -q -- "--auto-resume: continuing $WORK/ck/step-" r0b.log \
    || fail "the restarted rank 0 did not continue the checkpoint"
  [ "$(key r0b.json /stop_reason)" = "steps done" ] \
    || fail "stop reason $(key r0b.json /stop_reason)"
  [ -n "$(key r0b.json /resumed_from/steps)" ] || fail "not resumed"
  local a b
  a=$(key plain.json /param_hash)
  b=$(key r0b.json /param_hash)
  echo "param_hash uninterrupted $a, rank 0 killed and restarted $b" >&2
  [ -n "$a" ] && [ "$a" = "$b" ] || fail "the parameters differ"
  for n in "$n1" "$n2"; do
    for _ in $(seq 300); do kill -0 "$n" 2>/dev/null || break; sleep 0.1; done
    wait "$n" || fail "a node exited with $?"
  done
}

case $SCENARIO in
slurm) scenario_slurm ;;
mpi) scenario_mpi ;;
restart) scenario_restart ;;
*) fail "unknown scenario $SCENARIO" ;;
esac
echo "PASS ($SCENARIO)" >&2
