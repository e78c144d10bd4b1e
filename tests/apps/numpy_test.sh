#!/usr/bin/env bash
# Runs numpy_test.py with a Python that has numpy (scripts/common.sh
# installs python3-numpy); skipped (77) with a message if none has.
#   numpy_test.sh TROUPE [PYTHON]
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
for py in ${2:-} python3 /usr/bin/python3; do
  if command -v "$py" >/dev/null 2>&1 && "$py" -c 'import numpy' 2>/dev/null; then
    work=$(mktemp -d /tmp/troupe-numpy.XXXXXX)
    trap 'rm -rf "$work"' EXIT
    timeout 300 "$py" "$HERE/numpy_test.py" "$1" "$work"
    exit $?
  fi
done
echo "SKIPPED: no python3 with numpy (apt-get install python3-numpy)" >&2
exit 77
