#!/usr/bin/env python3
"""The docs' C++ snippets come from the compiled examples.

In a source file a snippet sits between `// [snippet:NAME]` and
`// [/snippet]`. In docs/*.md and README.md a ```cpp block is quoted from
there when the line before it is

    <!-- snippet: examples/FILE.cpp#NAME -->

  snippets.py --check ROOT   fails (exit 1) if a quoted block differs from its
                             source, or a ```cpp block in the docs has no
                             marker (user code is never retyped);
  snippets.py --update ROOT  rewrites the quoted blocks from their sources.
"""
import pathlib
import re
import sys
import textwrap

MARKER = re.compile(r"^<!-- snippet: (\S+)#(\S+) -->$")


def extract(root, path, name):
    """The dedented lines of snippet NAME in PATH (relative to ROOT)."""
    lines = (root / path).read_text().splitlines()
    begin = f"// [snippet:{name}]"
    try:
        start = next(i for i, l in enumerate(lines) if l.strip() == begin)
    except StopIteration:
        raise SystemExit(f"{path}: no snippet '{name}'")
    try:
        end = next(i for i in range(start + 1, len(lines))
                   if lines[i].strip() == "// [/snippet]")
    except StopIteration:
        raise SystemExit(f"{path}: snippet '{name}' has no // [/snippet]")
    return textwrap.dedent("\n".join(lines[start + 1:end])).splitlines()


def process(root, doc, update):
    """Returns the problems found in DOC; rewrites it when updating."""
    lines = doc.read_text().splitlines()
    out, problems, i = [], [], 0
    rel = doc.relative_to(root)
    while i < len(lines):
        line = lines[i]
        if line.strip() == "```cpp":
            m = MARKER.match(lines[i - 1].strip()) if i > 0 else None
            end = next((j for j in range(i + 1, len(lines))
                        if lines[j].strip() == "```"), len(lines))
            if m is None:
                problems.append(f"{rel}:{i + 1}: a ```cpp block without a "
                                "<!-- snippet: FILE#NAME --> marker")
                out.extend(lines[i:end + 1])
            else:
                want = extract(root, m.group(1), m.group(2))
                if lines[i + 1:end] != want:
                    problems.append(f"{rel}:{i + 1}: differs from "
                                    f"{m.group(1)}#{m.group(2)}")
                out.append(line)
                out.extend(want)
                out.append("```")
            i = end + 1
            continue
        out.append(line)
        i += 1
    if update and problems:
        doc.write_text("\n".join(out) + "\n")
    return problems


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("--check", "--update"):
        raise SystemExit(__doc__)
    root = pathlib.Path(sys.argv[2]).resolve()
    update = sys.argv[1] == "--update"
    docs = sorted((root / "docs").glob("*.md")) + [root / "README.md"]
    problems = [p for d in docs for p in process(root, d, update)]
    for p in problems:
        print(("updated " if update else "") + p)
    if problems and not update:
        print("run tests/package/snippets.py --update . to rewrite them")
        return 1
    print(f"snippets: {len(docs)} docs checked")
    return 0


if __name__ == "__main__":
    sys.exit(main())
