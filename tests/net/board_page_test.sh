#!/usr/bin/env bash
# troupe board in a real headless Chromium: two finished runs and a running
# one under one directory; the rendered page lists the three, overlays the
# curves of the runs it compares (a line each, axis ticks), marks the live
# one, and the API refuses a run outside the directory. A screenshot is
# kept as an artifact.
#   board_page_test.sh TROUPE ARTIFACT_DIR
set -uo pipefail
TROUPE=$1 ARTIFACTS=$2
source "$(dirname "$0")/browser.sh" board
http_get() { # PORT PATH: the status line and body
  timeout 10 bash -c 'exec 3<>/dev/tcp/127.0.0.1/'"$1"'
    printf "GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n" "'"$2"'" >&3
    cat <&3'
}

R=(--model=logreg --train-examples=6000 --epochs=4 --seed="$SEED" --progress=none)
timeout 120 "$TROUPE" train --algo=downpour --workers=2 "${R[@]}" \
  --report=runs/downpour 2>a.log || fail "the downpour run failed"
timeout 120 "$TROUPE" train --algo=easgd --workers=2 --shards=1 "${R[@]}" \
  --report=runs/easgd 2>b.log || fail "the easgd run failed"
# The curves carry the bytes the job sent so far (the board's "bytes sent"
# axis): a column that grows to the run's traffic.
head -1 runs/downpour/train.csv | grep -q '^seconds,steps,samples,bytes,' \
  || fail "train.csv has no bytes column: $(head -1 runs/downpour/train.csv)"
awk -F, 'NR > 1 { if ($4 < last) bad = 1; last = $4 } END { exit bad || last <= 0 }' \
  runs/downpour/train.csv || fail "the bytes column does not grow: $(tail -2 runs/downpour/train.csv)"
timeout 200 "$TROUPE" train --algo=downpour --model=mlp --workers=2 \
  --train-examples=12000 --epochs=200 --seed="$SEED" --progress=none \
  --report=runs/running --monitor=127.0.0.1:0 >/dev/null 2>c.log &
PIDS+=($!)
wait_log c.log "monitoring at" 60 || fail "the running job did not serve"
[ -s runs/running/live.json ] || fail "the running job wrote no live.json"
timeout 200 "$TROUPE" board --logdir=runs --listen=127.0.0.1:0 2>board.log &
PIDS+=($!)
wait_log board.log "at http://" 30 || fail "the board did not start"
PORT=$(grep -o 'at http://127.0.0.1:[0-9]*' board.log | sed 's/.*://')
grep -q "3 runs under runs" board.log || fail "the board does not count 3 runs"

URL="http://127.0.0.1:$PORT/"
render --dump-dom "$URL" >dom.html || fail "chromium failed: $(tail -3 chromium.log)"
for run in downpour easgd running; do
  grep -q "class=\"run\" data-name=\"$run\"" dom.html \
    || fail "the page does not list run $run"
done
grep -q 'data-name="running" data-status="live"' dom.html \
  || fail "the running job is not shown live"
for run in downpour easgd running; do
  grep -q "class=\"line\" data-name=\"$run\"" dom.html \
    || fail "the charts have no curve of run $run"
done
ticks=$(grep -o 'class="tick"' dom.html | wc -l)
[ "$ticks" -ge 8 ] || fail "the charts have $ticks axis ticks"
grep -q '<div id="error" style="display: none;"' dom.html \
  || fail "the page shows an error: $(grep -o '<div id="error"[^<]*' dom.html)"
echo "rendered: 3 runs, 3 curves overlaid, $ticks ticks" >&2
http_get "$PORT" "/api/series?run=../runs/downpour" | head -1 | grep -q " 404 " \
  || fail "a run outside the directory was not refused"
mkdir -p "$ARTIFACTS"
render --screenshot="$ARTIFACTS/board.png" --window-size=1300,1000 "$URL" \
  >/dev/null || fail "no screenshot"
echo "screenshot: $ARTIFACTS/board.png" >&2
echo PASS >&2
