#!/usr/bin/env bash
# Multi-process tests of distributed jobs: real troupe processes on
# 127.0.0.1 (and, as root, in two network namespaces). Every wait is bounded.
#   cluster_test.sh TROUPE HOSTILE_PEER JSON_GET SCENARIO
# Scenarios: sync, downpour, kill, freeze, shardkill, coordkill, tls,
# tlsguard, token, hostile, guardmem, loris, hosts, netns, monitor, stuck,
# lsgd, decentral, lbfgs, ledger, shardrestore, replicas, coordgrace, join,
# datadir, direct.
# Exit 0 pass, 1 fail, 77 skipped.
set -uo pipefail

TROUPE=$1
HOSTILE=$2
JSON_GET=$3
SCENARIO=$4
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=$(mktemp -d /tmp/troupe-cluster.XXXXXX)
PIDS=()
cleanup() {
  # The coordinators run under timeout(1): its child goes too.
  for p in "${PIDS[@]}"; do
    pkill -9 -P "$p" 2>/dev/null
    kill -9 "$p" 2>/dev/null
  done
  if [ "${KEEP:-0}" = 1 ]; then echo "kept $WORK" >&2; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
# shellcheck source=../lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh" # wait_log
cd "$WORK"

SEED=${TROUPE_TEST_SEED:-7}
echo "scenario $SCENARIO, seed $SEED, in $WORK" >&2
# A small, quick job: logistic regression on 12000 Fashion-MNIST examples.
JOB=(--model=logreg --train-examples=12000 --seed="$SEED" --progress=lines
     --json --request-timeout=20)

fail() {
  echo "FAIL ($SCENARIO): $*" >&2
  for f in *.log; do [ -f "$f" ] && { echo "--- $f" >&2; tail -20 "$f" >&2; }; done
  exit 1
}

key() { # key FILE POINTER: a value of the final JSON (json_get.cpp)
  "$JSON_GET" "$1" "$2"
}

# start_coordinator NAME ARGS...: runs troupe train --listen in the
# background; sets PORT once it listens (at most 60 s).
start_coordinator() {
  local name=$1
  shift
  timeout 240 "$TROUPE" train "$@" >"$name.json" 2>"$name.log" &
  PIDS+=($!)
  COORD=$!
  PORT=
  for _ in $(seq 600); do
    PORT=$(grep -o 'listening on [^ ,]*' "$name.log" 2>/dev/null | head -1 \
      | sed 's/.*://')
    [ -n "$PORT" ] && return 0
    kill -0 "$COORD" 2>/dev/null || fail "coordinator exited before listening"
    sleep 0.1
  done
  fail "coordinator did not listen within 60 s"
}

# start_node NAME ARGS...: troupe node in the background; sets NODE.
start_node() {
  local name=$1
  shift
  "$TROUPE" node --join=127.0.0.1:"$PORT" "$@" 2>"$name.log" &
  NODE=$!
  PIDS+=($NODE)
}

# wait_for PID SECONDS: waits for a process; returns its status (124: timeout).
wait_for() {
  local pid=$1 limit=$2
  for _ in $(seq $((limit * 10))); do
    kill -0 "$pid" 2>/dev/null || { wait "$pid"; return $?; }
    sleep 0.1
  done
  # A process that does not end is a hang to diagnose: its threads' stacks
  # (troupe's and CAF's frames) go to the test's output before it is killed.
  if command -v gdb >/dev/null 2>&1; then
    # A coordinator runs under timeout(1): the stacks are its child's.
    local target
    target=$(pgrep -P "$pid" | head -1)
    target=${target:-$pid}
    echo "--- threads of $target, which did not end within $limit s" >&2
    timeout 30 gdb -p "$target" -batch -ex "thread apply all bt" 2>/dev/null \
      | grep -E '^Thread|troupe|caf::' | cut -c1-200 | head -80 >&2
  fi
  pkill -9 -P "$pid" 2>/dev/null
  kill -9 "$pid" 2>/dev/null
  return 124
}


http_get() { # http_get PORT PATH [HEADER] -> the whole response
  exec 3<>"/dev/tcp/127.0.0.1/$1" || return 1
  printf 'GET %s HTTP/1.1\r\nHost: t\r\n%bConnection: close\r\n\r\n' \
    "$2" "${3:+$3\r\n}" >&3
  timeout 5 cat <&3
  exec 3<&-
}

# cluster_state PORT -> cluster.json: GET /api/cluster's body.
cluster_state() {
  http_get "$1" /api/cluster "${2:-}" | tail -1 >cluster.json
}

check_done() { # check_done NAME: the coordinator finished well
  wait_for "$COORD" 180 || fail "coordinator exited with status $?"
  [ "$(key "$1.json" /reached_target)" = true ] || fail "target not reached"
}

# kill_shard_node TEXT COORD_ARGS...: job R (of $algo) run unkilled into
# plain.json, then as a coordinator given COORD_ARGS with its workers on
# node n1 and its 2 shards on node n2, which is SIGKILLed once coord.log
# shows TEXT. The job must still finish every step (coord.json); sets N1
# and steps.
kill_shard_node() {
  local text=$1
  shift
  "$TROUPE" train "${R[@]}" >plain.json 2>plain.log \
    || fail "$algo: unkilled run failed"
  start_coordinator coord "${R[@]}" --listen=127.0.0.1:0 --expect=2 "$@"
  start_node n1 --workers=2 --shards=0; N1=$NODE
  start_node n2 --workers=0 --shards=2; N2=$NODE
  wait_log coord.log "$text" 90 || fail "$algo: no '$text' before the kill"
  kill -9 "$N2"
  wait_for "$COORD" 120 || fail "$algo: coordinator exited with status $?"
  wait_for "$N1" 30 || fail "$algo: the workers' node exited with status $?"
  [ "$(key coord.json /stop_reason)" = "steps done" ] \
    || fail "$algo: stop reason $(key coord.json /stop_reason)"
  steps=$(key coord.json /steps)
  [ "$steps" = "$(key plain.json /steps)" ] || fail "$algo: steps $steps"
}

# within_half_point: coord.json's accuracy within 0.5 point of plain.json's.
within_half_point() {
  local a b
  a=$(key coord.json /test_accuracy) b=$(key plain.json /test_accuracy)
  echo "$algo: accuracy with the shards' node killed $a, unkilled $b" >&2
  awk -v a="$a" -v b="$b" 'BEGIN { d = a - b; exit !(d < 0.005 && d > -0.005) }' \
    || fail "$algo: accuracy $a is not within 0.5 point of $b"
}

# The scenarios, one function each, grouped by theme in cluster/*.sh.
# shellcheck source=cluster/security.sh
source "$HERE/cluster/security.sh"
# shellcheck source=cluster/failures.sh
source "$HERE/cluster/failures.sh"
# shellcheck source=cluster/durability.sh
source "$HERE/cluster/durability.sh"
# shellcheck source=cluster/jobs.sh
source "$HERE/cluster/jobs.sh"
# shellcheck source=cluster/data.sh
source "$HERE/cluster/data.sh"

case "$SCENARIO" in
sync) scenario_sync ;;
downpour) scenario_downpour ;;
kill | freeze) scenario_kill_freeze ;;
stagekill) scenario_stagekill ;;
lsgd) scenario_lsgd ;;
lbfgs) scenario_lbfgs ;;
decentral) scenario_decentral ;;
shardrestore) scenario_shardrestore ;;
replicas) scenario_replicas ;;
coordgrace) scenario_coordgrace ;;
shardkill) scenario_shardkill ;;
ledger) scenario_ledger ;;
join) scenario_join ;;
datadir) scenario_datadir ;;
direct) scenario_direct ;;
coordkill) scenario_coordkill ;;
tls) scenario_tls ;;
tlsguard) scenario_tlsguard ;;
token) scenario_token ;;
hostile) scenario_hostile ;;
guardmem) scenario_guardmem ;;
loris) scenario_loris ;;
hosts) scenario_hosts ;;
monitor) scenario_monitor ;;
stuck) scenario_stuck ;;
netns) scenario_netns ;;
*)
  echo "unknown scenario $SCENARIO" >&2
  exit 2
  ;;
esac
echo "PASS ($SCENARIO)" >&2
