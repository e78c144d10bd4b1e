#!/usr/bin/env bash
# The dashboard of a running job, rendered by a real headless Chromium: the
# rendered page lists the job's actors, draws a non-empty loss chart with
# axis ticks, per-worker rates over a window with their sum, and shows no
# error; a finished job's dashboard kept up by --monitor-linger says it
# ended and gives the whole run's rates, and a pipelined job's stages
# their bubble. Screenshots (1400 and 600 px
# wide) are kept as artifacts.
#   dashboard_test.sh TROUPE JSON_GET ARTIFACT_DIR
set -uo pipefail
TROUPE=$1 JSON_GET=$2 ARTIFACTS=$3
source "$(dirname "$0")/browser.sh" dashboard

# A job that trains for a while, with the endpoint and a token.
timeout 200 "$TROUPE" train --algo=downpour --model=mlp --workers=2 --shards=2 \
  --train-examples=12000 --epochs=100 --eval-every=0.5 --seed="$SEED" \
  --progress=lines --monitor=127.0.0.1:0 --monitor-token=s3cret \
  >job.json 2>job.log &
JOB=$!
PIDS+=("$JOB")
PORT=
for _ in $(seq 600); do
  PORT=$(grep -o 'monitoring at http://127.0.0.1:[0-9]*' job.log | sed 's/.*://')
  [ -n "$PORT" ] && break
  kill -0 "$JOB" 2>/dev/null || fail "the job ended before serving"
  sleep 0.1
done
[ -n "$PORT" ] || fail "no monitoring address within 60 s"
wait_log job.log test_acc 60 || fail "no evaluation within 60 s"

URL="http://127.0.0.1:$PORT/#token=s3cret"
render --dump-dom "$URL" >dom.html || fail "chromium failed: $(tail -3 chromium.log)"
for a in coordinator evaluator "shard 0" "shard 1" "worker 0" "worker 1"; do
  grep -q "class=\"actor\" data-name=\"$a\"" dom.html \
    || fail "the rendered page does not show $a"
done
points=$(grep -o 'id="chart-loss"[^>]*data-points="[0-9]*"' dom.html | grep -o '[0-9]*"$' | tr -d '"')
[ "${points:-0}" -gt 0 ] || fail "the loss chart is empty"
bars=$(grep -o 'id="chart-throughput"[^>]*data-points="[0-9]*"' dom.html | grep -o '[0-9]*"$' | tr -d '"')
[ "${bars:-0}" -eq 2 ] || fail "the throughput chart has ${bars:-0} bars, not 2"
grep -q '<div id="error" style="display: none;"' dom.html \
  || fail "the page shows an error: $(grep -o '<div id="error"[^<]*' dom.html)"
ticks=$(grep -o 'class="tick"' dom.html | wc -l)
[ "$ticks" -ge 8 ] || fail "the charts have $ticks axis ticks"
grep -q 'id="rates-title">samples/s per worker ([0-9]* s window; sum [0-9]*)' dom.html \
  || fail "no windowed rates: $(grep -o 'id="rates-title">[^<]*' dom.html)"
points_of() {
  grep -o "id=\"$1\"[^>]*data-points=\"[0-9]*\"" dom.html | grep -o '[0-9]*"$' | tr -d '"'
}
# Each worker's smoothed loss and the shards' learning rate (a line each),
# the shards' staleness histogram (a bar per bucket: 0, 1, 2, 3-4, ... >64).
[ "$(points_of chart-worker-loss)" -ge 2 ] || fail "the per-worker loss chart is empty"
[ "$(points_of chart-lr)" -ge 2 ] || fail "the learning-rate chart is empty"
[ "$(points_of chart-staleness)" -eq 9 ] \
  || fail "the staleness chart has $(points_of chart-staleness) bars, not 9"
grep -q 'id="staleness-title">staleness of applied pushes ([1-9][0-9]* pushes' dom.html \
  || fail "no staleness counts: $(grep -o 'id="staleness-title">[^<]*' dom.html)"
# The node's row: its CPU, memory and threads.
row=$(tr -d '\n' <dom.html | grep -o '<table id="nodes">.*</table>' | grep -o '<tbody>.*' | head -c 2000)
echo "$row" | grep -q '<td>[0-9]*\.[0-9][0-9]</td><td>[0-9.]* MiB</td><td>[1-9][0-9]*</td>' \
  || fail "the nodes table lacks CPU, memory or threads: $row"
echo "rendered: 6 actors, loss chart with $points points, $ticks ticks; per-worker loss, rates, staleness, node use" >&2

# Without the token in the URL the page says why it cannot refresh.
render --dump-dom "http://127.0.0.1:$PORT/" >dom_no_token.html
grep -q 'HTTP 401' dom_no_token.html || fail "no 401 message without the token"

mkdir -p "$ARTIFACTS"
render --screenshot="$ARTIFACTS/dashboard.png" --window-size=1400,1000 "$URL" \
  >/dev/null || fail "no screenshot"
[ "$(head -c 8 "$ARTIFACTS/dashboard.png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] \
  || fail "the screenshot is not a PNG"
render --screenshot="$ARTIFACTS/dashboard-600.png" --window-size=600,1100 "$URL" \
  >/dev/null || fail "no screenshot at 600 px"
echo "screenshot: $ARTIFACTS/dashboard.png ($(stat -c %s "$ARTIFACTS/dashboard.png") bytes)" >&2
kill "$JOB" 2>/dev/null
wait "$JOB" 2>/dev/null

# Without pipeline stages the stages' chart stays hidden.
grep -q 'id="bubble-section" style="display: none;\?"' dom.html \
  || fail "a stages chart without stages"

# A finished job whose dashboard lingers: it says the job ended, with the
# whole run's rates; its replicas are pipelines (--stages), and the stages'
# chart shows each stage's bubble.
timeout 200 "$TROUPE" train --algo=downpour --model=mlp --workers=2 \
  --stages=2 --train-examples=6000 --seed="$SEED" --progress=none \
  --monitor=127.0.0.1:0 --monitor-linger=120 >job.json 2>job.log &
JOB=$!
PIDS+=("$JOB")
for _ in $(seq 600); do
  grep -q "stays at" job.log && break
  kill -0 "$JOB" 2>/dev/null || fail "the job ended without lingering"
  sleep 0.1
done
PORT=$(grep -o 'stays at http://127.0.0.1:[0-9]*' job.log | sed 's/.*://')
[ -n "$PORT" ] || fail "no lingering dashboard within 60 s"
render --dump-dom "http://127.0.0.1:$PORT/" >dom_ended.html \
  || fail "chromium failed: $(tail -3 chromium.log)"
grep -q 'downpour · ended' dom_ended.html || fail "the finished job is not shown ended"
grep -q 'samples/s per worker (whole run; sum [0-9]*)' dom_ended.html \
  || fail "no whole-run rates: $(grep -o 'id="rates-title">[^<]*' dom_ended.html)"
grep -q 'id="bubble-section" style=""' dom_ended.html \
  || fail "no stages chart for a pipelined job"
for st in "stage 0 of replica 0" "stage 1 of replica 1"; do
  grep -q "class=\"actor\" data-name=\"$st\"" dom_ended.html \
    || fail "the rendered page does not show $st"
done
bubble=$(grep -o 'id="chart-bubble"[^>]*data-points="[0-9]*"' dom_ended.html \
  | grep -o '[0-9]*"$' | tr -d '"')
[ "${bubble:-0}" -ge 4 ] || fail "the stages chart has ${bubble:-no} points"
echo "the finished job's dashboard: ended, whole-run rates, 4 stages' bubble" >&2
echo PASS >&2
