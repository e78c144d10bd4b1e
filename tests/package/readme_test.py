#!/usr/bin/env python3
"""The README's commands run as written.

  readme_test.py SOURCE_DIR BUILD_DIR

Runs every ```sh block of SOURCE_DIR/README.md, in order, in one bash
session (so an `export` carries on), in a scratch directory that looks like
the source tree after ./scripts/test (`build` and `examples` link to the real
ones; HOME is inside it). A block is marked by the HTML comment on the line
before it:

  <!-- readme-test: skip (why) -->   not run (the two commands themselves,
                                     which run this test);
  <!-- readme-test: serves URL -->   a server that runs until Ctrl-C: started
                                     in the background, it must answer URL
                                     with a page within 120 s, then it is
                                     stopped with SIGTERM.

Any other block must exit 0 (bash -e: every command in it). Exit 0 pass,
1 fail; a failing block is printed with its output.
"""
import os
import pathlib
import re
import shlex
import subprocess
import sys
import tempfile

MARK = re.compile(r"^<!-- readme-test: (skip|serves)\b\s*(.*?)\s*-->$")


def blocks(readme):
    """(mark, argument, text, line) of every ```sh block."""
    lines = readme.read_text().splitlines()
    out = []
    i = 0
    while i < len(lines):
        if lines[i].strip() == "```sh":
            start = i
            j = i + 1
            while j < len(lines) and lines[j].strip() != "```":
                j += 1
            m = MARK.match(lines[i - 1].strip()) if i > 0 else None
            mark, arg = (m.group(1), m.group(2)) if m else ("run", "")
            out.append((mark, arg, "\n".join(lines[i + 1:j]), start + 1))
            i = j
        i += 1
    return out


SERVE = r'''
serve() {  # serve LINE URL TEXT
  local line=$1 url=$2 text=$3 log="serve-$1.log"
  echo "== README line $line (serves $url)"
  setsid bash -c "$text" >"$log" 2>&1 </dev/null &
  local pid=$! ok=0
  for _ in $(seq 1 240); do
    if python3 - "$url" <<'PY' 2>/dev/null
import sys, urllib.request
with urllib.request.urlopen(sys.argv[1], timeout=5) as r:
    body = r.read(65536).decode("utf-8", "replace").lower()
    sys.exit(0 if r.status == 200 and "<html" in body else 1)
PY
    then ok=1; break; fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.5
  done
  kill -TERM -- "-$pid" 2>/dev/null
  wait "$pid" 2>/dev/null || true
  if [ "$ok" != 1 ]; then
    echo "FAIL: README line $line: $url never answered with a page" >&2
    tail -20 "$log" >&2
    exit 1
  fi
  echo "$url answered"
}
'''


def main():
    src = pathlib.Path(sys.argv[1]).resolve()
    build = pathlib.Path(sys.argv[2]).resolve()
    found = blocks(src / "README.md")
    if not any(mark == "run" for mark, *_ in found):
        print("FAIL: README.md has no block to run", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="troupe-readme.") as work:
        work = pathlib.Path(work)
        (work / "build").symlink_to(build)
        (work / "examples").symlink_to(src / "examples")
        (work / "home").mkdir()
        script = ["set -euo pipefail", SERVE]
        for mark, arg, text, line in found:
            if mark == "skip":
                print(f"README line {line}: skipped {arg}")
                continue
            if mark == "serves":
                script.append(f"serve {line} {shlex.quote(arg)} "
                              f"{shlex.quote(text)}")
                continue
            script.append(f"echo {shlex.quote(f'== README line {line}')}")
            script.append(text)
        script.append("echo '== all of the README ran'")
        env = dict(os.environ, HOME=str(work / "home"))
        env.pop("TROUPE_BUILD", None)
        print("in", work, flush=True)
        r = subprocess.run(["bash", "-c", "\n".join(script)], cwd=work,
                           env=env, timeout=1500)
        if r.returncode != 0:
            print(f"FAIL: a README command failed (status {r.returncode}); "
                  "the last block above", file=sys.stderr)
            return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
