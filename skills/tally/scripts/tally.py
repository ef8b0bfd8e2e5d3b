#!/usr/bin/env python3
"""Count words, lines and characters of text files; optionally the most frequent words."""

import argparse
import collections
import json
import re
import sys

WORD = re.compile(r"[\w'’-]+")
STOP = set(
    "a an and are as at be by for from has he in is it its of on that the to was were will with".split()
)


def tally(text):
    lines = text.count("\n") + (1 if text and not text.endswith("\n") else 0)
    words = [w for w in WORD.findall(text) if w.strip("-'’")]
    return {"words": len(words), "lines": lines, "characters": len(text)}, words


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("files", nargs="+")
    ap.add_argument("--top", type=int, default=0, help="also list the N most frequent words")
    ap.add_argument("--keep-stop-words", action="store_true")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    results = []
    for path in args.files:
        try:
            with open(path, "rb") as fh:
                raw = fh.read()
        except OSError as exc:
            print(f"tally: cannot read {path}: {exc.strerror}", file=sys.stderr)
            return 2
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            print(f"tally: {path} is not UTF-8; decoding with replacement characters", file=sys.stderr)
            text = raw.decode("utf-8", errors="replace")
        counts, words = tally(text)
        entry = {"file": path, **counts}
        if args.top:
            pool = (w.lower() for w in words)
            if not args.keep_stop_words:
                pool = (w for w in pool if w not in STOP)
            entry["top"] = collections.Counter(pool).most_common(args.top)
        results.append(entry)
    if args.json:
        print(json.dumps(results if len(results) > 1 else results[0], ensure_ascii=False))
        return 0
    for e in results:
        print(f"{e['file']}: {e['words']} words, {e['lines']} lines, {e['characters']} characters")
        for word, n in e.get("top", []):
            print(f"  {n:>6}  {word}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
