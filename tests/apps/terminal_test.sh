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
# Every line fits in 80 columns (characters, not bytes): the bar is cut to
# the width, and every message and log line is broken to it.
long=$(LC_ALL=C.UTF-8 awk 'length($0) > 80' segments.txt | head -1)
[ -z "$long" ] || fail "a line wider than 80 columns: $long"
# One style: every line that is not the bar (or a broken line's
# continuation) is "troupe train: ...".
other=$(grep -v 'ETA' segments.txt | grep -v '^troupe train: \|^  ' | head -1)
[ -z "$other" ] || fail "a line in another style: $other"
# The log's lines start a line of their own; no bar text before them.
logs=$(grep -c '^troupe train: checkpoint at step' segments.txt)
[ "$logs" -ge 1 ] || fail "the job logged nothing to test against"
glued=$(grep '.troupe [a-z]*\( [^ :]*\)\?: ' segments.txt | head -1)
[ -z "$glued" ] || fail "a line glued onto the bar: $glued"
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

# troupe launch --local: the nodes' lines come through this terminal too,
# each naming its node, never glued onto the coordinator's bar.
CMD="stty cols 80 rows 24; exec '$TROUPE' launch --local=2 --algo=downpour \
--workers=2 --model=logreg --train-examples=6000 --epochs=20 --seed=$SEED"
timeout 120 script -qfec "$CMD" /dev/null >out.txt 2>&1 </dev/null \
  || fail "troupe launch failed under a terminal (status $?)"
sed -e 's/\x1b\[K//g' out.txt | tr '\r' '\n' | grep -v '^$' >segments.txt
for n in 1 2; do
  grep -q "^troupe node $n: joined the job at 127.0.0.1:[0-9]* as node " \
    segments.txt || fail "node $n's lines are not relayed as troupe node $n"
  grep -q "^troupe node $n: the job ended" segments.txt \
    || fail "node $n's last line is missing"
done
glued=$(grep '.troupe [a-z]*\( [^ :]*\)\?: ' segments.txt | head -1)
[ -z "$glued" ] || fail "launch: a line glued onto the bar: $glued"
long=$(LC_ALL=C.UTF-8 awk 'length($0) > 80' segments.txt | head -1)
[ -z "$long" ] || fail "launch: a line wider than 80 columns: $long"
other=$(grep -v 'ETA' segments.txt \
  | grep -v '^troupe train: \|^troupe node [12]: \|^  ' | head -1)
[ -z "$other" ] || fail "launch: a line in another style: $other"
echo "launch: the nodes' lines relayed, all within 80 columns" >&2
echo "PASS"
