#!/usr/bin/env python3
"""Show the structure of a JSON / JSON Lines file, or extract values by path."""

import argparse
import json
import re
import sys
from collections import OrderedDict

TYPE = {dict: "object", list: "array", str: "string", bool: "boolean", int: "number", float: "number", type(None): "null"}


def load(path):
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    try:
        return json.loads(text), False
    except json.JSONDecodeError as first:
        rows = []
        for i, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError:
                    raise first from None
        return rows, True


def walk(value, path, stats, depth, max_depth):
    entry = stats.setdefault(path, {"types": OrderedDict(), "count": 0, "sample": None})
    entry["count"] += 1
    entry["types"][TYPE.get(type(value), type(value).__name__)] = True
    if entry["sample"] is None and not isinstance(value, (dict, list)):
        s = json.dumps(value, ensure_ascii=False)
        entry["sample"] = s if len(s) <= 40 else s[:37] + "..."
    if max_depth and depth >= max_depth:
        return
    if isinstance(value, dict):
        for k, v in value.items():
            key = f".{k}" if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", k) else f"[{json.dumps(k)}]"
            walk(v, path + key, stats, depth + 1, max_depth)
    elif isinstance(value, list):
        for v in value:
            walk(v, path + "[]", stats, depth + 1, max_depth)


TOKEN = re.compile(r'\.([A-Za-z_][A-Za-z0-9_]*)|\[\]|\[(\d+)\]|\[("(?:[^"\\]|\\.)*")\]')


def get(value, path):
    if not path.startswith("$"):
        raise ValueError("paths start with $")
    items = [value]
    rest = path[1:]
    pos = 0
    while pos < len(rest):
        m = TOKEN.match(rest, pos)
        if not m:
            raise ValueError(f"cannot parse path at '{rest[pos:]}'")
        pos = m.end()
        nxt = []
        for it in items:
            if m.group(0) == "[]":
                if isinstance(it, list):
                    nxt.extend(it)
            elif m.group(2) is not None:
                i = int(m.group(2))
                if isinstance(it, list) and i < len(it):
                    nxt.append(it[i])
            else:
                key = m.group(1) if m.group(1) is not None else json.loads(m.group(3))
                if isinstance(it, dict) and key in it:
                    nxt.append(it[key])
        items = nxt
    return items


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("file")
    ap.add_argument("--depth", type=int, default=0)
    ap.add_argument("--get", metavar="PATH")
    args = ap.parse_args(argv)
    try:
        data, lines = load(args.file)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        print(f"shape: {args.file}: {exc}", file=sys.stderr)
        return 2
    if args.get:
        try:
            for v in get(data, args.get):
                print(v if isinstance(v, str) else json.dumps(v, ensure_ascii=False))
        except ValueError as exc:
            print(f"shape: {exc}", file=sys.stderr)
            return 2
        return 0
    stats = OrderedDict()
    walk(data, "$", stats, 0, args.depth)
    if lines:
        print(f"# JSON Lines: {len(data)} records")
    width = min(60, max(len(p) for p in stats))
    for p, e in stats.items():
        sample = f"  e.g. {e['sample']}" if e["sample"] else ""
        print(f"{p:<{width}}  {'|'.join(e['types'])}  x{e['count']}{sample}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
