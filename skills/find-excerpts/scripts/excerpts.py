#!/usr/bin/env python3
"""Print short numbered excerpts around matches of a pattern in files or folders."""

import argparse
import os
import re
import sys


def files_under(paths):
    for p in paths:
        if os.path.isdir(p):
            for root, dirs, names in os.walk(p):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                for n in sorted(names):
                    if not n.startswith("."):
                        yield os.path.join(root, n)
        else:
            yield p


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("pattern")
    ap.add_argument("paths", nargs="+")
    ap.add_argument("-i", action="store_true", help="ignore case")
    ap.add_argument("-F", action="store_true", help="plain text, not a regular expression")
    ap.add_argument("-C", type=int, default=1, help="lines of context")
    ap.add_argument("--max", type=int, default=10, help="matches shown per file")
    args = ap.parse_args(argv)
    try:
        rx = re.compile(re.escape(args.pattern) if args.F else args.pattern, re.I if args.i else 0)
    except re.error as exc:
        print(f"excerpts: bad pattern: {exc}", file=sys.stderr)
        return 2
    total = hidden = 0
    for path in files_under(args.paths):
        try:
            with open(path, "rb") as fh:
                raw = fh.read()
        except OSError as exc:
            print(f"excerpts: cannot read {path}: {exc.strerror}", file=sys.stderr)
            continue
        if b"\x00" in raw[:4096]:
            continue  # binary
        lines = raw.decode("utf-8", errors="replace").splitlines()
        hits = [i for i, line in enumerate(lines) if rx.search(line)]
        total += len(hits)
        hidden += max(0, len(hits) - args.max)
        last = -1
        for i in hits[: args.max]:
            lo, hi = max(0, i - args.C), min(len(lines), i + args.C + 1)
            lo = max(lo, last + 1)
            if lo >= hi:
                continue
            print(f"{path}:{i + 1}:")
            for j in range(lo, hi):
                mark = ">" if j == i or (j in hits and j < hi) else " "
                text = lines[j] if len(lines[j]) <= 300 else lines[j][:297] + "..."
                print(f"{mark}{j + 1:>6}  {text}")
            last = hi - 1
    print(f"# {total} match{'es' * (total != 1)}" + (f", {hidden} not shown (raise --max)" if hidden else ""))
    return 0 if total else 1


if __name__ == "__main__":
    sys.exit(main())
