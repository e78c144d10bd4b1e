# Scenarios of tests/net/cluster_test.sh, which sources this file: jobs on
# a sharded data directory (--data=DIR with train/ and test/ CSV files).
# Each uses the globals and helpers the entry point defines.
# shellcheck shell=bash

# digits_dir DIR: scikit-learn's digits (1797 8x8 images, 64 pixel columns
# and the digit, no header) as a data directory: every tenth row in
# DIR/test/test.csv, the others dealt round-robin into 8 training files.
# Returns 1 without python3-sklearn.
digits_dir() {
  local src=/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz
  [ -f "$src" ] || src=$(dpkg -L python3-sklearn 2>/dev/null \
    | grep '/datasets/data/digits\.csv\.gz$' | head -1)
  [ -n "$src" ] && [ -f "$src" ] || return 1
  mkdir -p "$1/train" "$1/test"
  zcat "$src" | awk -F, -v dir="$1" '
    BEGIN { for (i = 0; i < 64; i++) head = head "p" i ","; head = head "digit" }
    NF != 65 { print "digits: line " NR ": " NF " fields" > "/dev/stderr"; exit 1 }
    {
      f = NR % 10 == 0 ? dir "/test/test.csv" \
                       : sprintf("%s/train/part-%d.csv", dir, n++ % 8)
      if (!(f in seen)) { print head > f; seen[f] = 1 }
      print > f
    }'
}

scenario_datadir() {
  # Two nodes, a worker each, read only their own files (4 of the 8); one
  # is killed mid-run and the survivor loads the lost worker's files and
  # takes every step left. The data are never loaded whole by a worker.
  digits_dir "$WORK/digits" || {
    echo "SKIPPED: scikit-learn's digits.csv.gz not found (python3-sklearn)" >&2
    exit 77
  }
  local files mine
  D=(--algo=downpour --workers=2 --data="$WORK/digits" --label-column=digit
     --model=mlp --batch=8 --seed="$SEED" --progress=lines --json
     --request-timeout=20)
  # Unplaced first: the same job in one process.
  timeout 120 "$TROUPE" train "${D[@]}" --epochs=20 --save=m.safetensors \
    >plain.json 2>plain.log || fail "unplaced run failed"
  grep -q "reads .* examples from 4 files of $WORK/digits/train" plain.log \
    || fail "no worker said it reads its 4 files"
  acc=$(key plain.json /test_accuracy)
  echo "data directory, one process: accuracy $acc" >&2
  awk -v a="$acc" 'BEGIN { exit !(a >= 0.9) }' || fail "accuracy $acc < 0.9"
  # The saved model, evaluated on the directory's test files (the data and
  # label column the run kept): the run's own figure.
  timeout 60 "$TROUPE" eval --model=m.safetensors >eval.json 2>eval.log \
    || fail "troupe eval failed: $(cat eval.log)"
  [ "$(key eval.json /test_accuracy)" = "$acc" ] \
    || fail "troupe eval: accuracy $(key eval.json /test_accuracy), the run's $acc"
  start_coordinator coord "${D[@]}" --epochs=30 \
    --listen=127.0.0.1:0 --expect=2 --heartbeat=0.1 --node-timeout=1
  start_node n1 --heartbeat=0.1 --node-timeout=1; N1=$NODE
  start_node n2 --heartbeat=0.1 --node-timeout=1; N2=$NODE
  wait_log coord.log "epoch [2-9]\." 60 || fail "training did not start"
  kill -9 "$N2"
  wait_for "$COORD" 180 || fail "coordinator exited with status $?"
  [ "$(key coord.json /stop_reason)" = "steps done" ] || fail "job did not complete"
  # The survivor's log: its own 4 files, then the lost worker's examples.
  grep -q "reads [0-9]* examples from 4 files" n1.log \
    || fail "the surviving worker did not read its 4 files"
  w=$(key coord.json /failures/0/index)
  files=$(printf "$WORK/digits/train/part-%d.csv " $(seq "$w" 2 7))
  # shellcheck disable=SC2086
  mine=$(cat $files | grep -vc '^p0')
  grep -q "takes over $mine examples" n1.log \
    || fail "the survivor did not load the $mine examples of worker $w"
  budget=$((2 * $(key coord.json /steps_per_worker)))
  done_steps=$(($(key coord.json /steps) + $(key coord.json /lost_worker_steps)))
  [ "$done_steps" -ge "$budget" ] || fail "$done_steps of $budget steps taken"
  acc=$(key coord.json /test_accuracy)
  echo "data directory, a node lost: accuracy $acc" >&2
  awk -v a="$acc" 'BEGIN { exit !(a >= 0.9) }' || fail "accuracy $acc < 0.9"
  wait_for "$N1" 30 || fail "surviving node exited with status $?"
  # More workers than files: refused, naming the directory.
  timeout 60 "$TROUPE" train "${D[@]}" --workers=9 >/dev/null 2>err.log
  [ $? = 2 ] || fail "--workers=9 on 8 files: status not 2"
  grep -q "digits/train has 8 files" err.log || fail "$(cat err.log)"
}
