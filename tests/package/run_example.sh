#!/usr/bin/env bash
# run_example.sh PATTERN PROGRAM [ARGS...]: runs an example, shows its
# output, and passes if it exits 0 and a line of its output matches the
# extended regular expression PATTERN (what proves it worked).
set -uo pipefail
pattern=$1
shift
out=$(timeout 200 "$@" 2>&1)
rc=$?
printf '%s\n' "$out"
if [ "$rc" -ne 0 ]; then
  echo "FAIL: $* exited with status $rc" >&2
  exit 1
fi
if ! grep -Eq -- "$pattern" <<<"$out"; then
  echo "FAIL: no line of the output matches /$pattern/" >&2
  exit 1
fi
