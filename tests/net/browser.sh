# What the tests of troupe's pages in a real headless Chromium share
# (sourced by dashboard_test.sh and board_page_test.sh): skip (status 77)
# without chromium; a scratch directory WORK (entered, removed at exit with
# the processes in PIDS); SEED; fail (the logs' tails), wait_log and render.
#   source browser.sh NAME
CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$CHROMIUM" ]; then
  echo "SKIP: chromium is not installed (apt-get install chromium)" >&2
  exit 77
fi
WORK=$(mktemp -d "/tmp/troupe-$1.XXXXXX")
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  rm -rf "$WORK"
}
trap cleanup EXIT
# shellcheck source=../lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh" # wait_log
cd "$WORK" || exit 1
SEED=${TROUPE_TEST_SEED:-7}
echo "seed $SEED, in $WORK" >&2

fail() {
  echo "FAIL: $*" >&2
  for f in *.log; do [ -f "$f" ] && { echo "--- $f" >&2; tail -10 "$f" >&2; }; done
  exit 1
}


# render URL ARGS... -> stdout: the DOM (--dump-dom) after the page's
# scripts ran for 5 s of virtual time, or a screenshot (--screenshot=FILE).
render() {
  timeout 90 "$CHROMIUM" --headless --no-sandbox --disable-gpu \
    --disable-dev-shm-usage --user-data-dir="$WORK/profile" \
    --virtual-time-budget=6000 "$@" 2>>chromium.log
}
