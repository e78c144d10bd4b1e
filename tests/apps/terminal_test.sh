#!/usr/bin/env bash
# troupe train's display in a real pseudo-terminal of 80 columns (util-
# linux's `script`): the progress bar redraws one line in place, never wider
# than the terminal; the logger's lines come out on lines of their own above
# it, never glued onto the bar; with a target the bar counts toward it; the
# run ends with a one-line human summary and no JSON (without --json).
#   terminal_test.sh TROUPE
# Exit 0 pass, 1 fail, 77 skipped (no `script`).
set -uo pipefail
TROUPE=$1
command -v script >/dev/null || { echo "no script(1): skipped" >&2; exit 77; }
WORK=$(mktemp -d /tmp/troupe-terminal.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"
SEED=${TROUPE_TEST_SEED:-7}
echo "seed $SEED, in $WORK" >&2
fail() {
  echo "FAIL: $*" >&2
  tr '\r' '\n' <out.txt | tail -15 >&2
  exit 1
}
# A job that logs while the bar is shown (a checkpoint every 40 steps) and
# whose target it does not reach.
CMD="stty cols 80 rows 24; exec '$TROUPE' train --algo=downpour --workers=2 \
--shards=2 --model=logreg --train-examples=6000 --epochs=40 --seed=$SEED \
--target-accuracy=0.99 --eval-every=100 --checkpoint-dir=ck \
--checkpoint-every=300"
timeout 120 script -qfec "$CMD" /dev/null >out.txt 2>&1 </dev/null \
  || fail "troupe train failed under a terminal (status $?)"
# Segments: what is between carriage returns and newlines, the bar's
# clear-to-end-of-line escape removed.
sed -e 's/\x1b\[K//g' out.txt | tr '\r' '\n' | grep -v '^$' >segments.txt
bars=$(grep -c 'ETA' segments.txt)
[ "$bars" -ge 3 ] || fail "only $bars bar redraws"
# Every line fits in 80 columns (characters, not bytes); the log's lines
# may be longer (the terminal wraps them, below the bar's line).
long=$(grep -v '^\[[0-9:.]*\] \[' segments.txt \
  | LC_ALL=C.UTF-8 awk 'length($0) > 80' | head -1)
[ -z "$long" ] || fail "a line wider than 80 columns: $long"
# The log's lines start a line of their own; no bar text before them.
logs=$(grep -c '\] \[info\] ' segments.txt)
[ "$logs" -ge 1 ] || fail "the job logged nothing to test against"
glued=$(grep '\] \[info\] \|\] \[warning\] ' segments.txt | grep -v '^\[[0-9:.]*\] \[' | head -1)
[ -z "$glued" ] || fail "a log line glued onto the bar: $glued"
# The bar counts toward the target: it says so, and never shows 100%.
grep -q '% of 0.99' segments.txt || fail "the bar does not count toward the target"
grep 'ETA' segments.txt | grep -q ' 100% ' && fail "100% shown for a target not reached"
# The run ends with the summary (broken to the width); no JSON without
# --json.
last=$(tail -3 segments.txt | sed -n '/^troupe train: /,$p' | paste -sd' ' \
  | tr -s ' ')
echo "$last" | grep -q '^troupe train: .*test accuracy 0\.[0-9]* (target 0\.9900 not reached) after' \
  || fail "the run does not end with the summary: $last"
grep -q '^{' segments.txt && fail "JSON on the terminal without --json"
echo "$bars bar redraws, $logs log lines, all within 80 columns" >&2
echo "PASS"
