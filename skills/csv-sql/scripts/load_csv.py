#!/usr/bin/env python3
"""Load CSV files into SQLite tables with inferred column types."""

import argparse
import csv
import re
import sqlite3
import sys
from pathlib import Path


def snake(name, i):
    s = re.sub(r"[^0-9a-zA-Z]+", "_", name.strip()).strip("_").lower()
    if not s:
        s = f"col{i + 1}"
    if s[0].isdigit():
        s = "c_" + s
    return s


def infer(values):
    kind = "INTEGER"
    for v in values:
        if v == "":
            continue
        if kind == "INTEGER":
            try:
                int(v)
                continue
            except ValueError:
                kind = "REAL"
        if kind == "REAL":
            try:
                float(v)
                continue
            except ValueError:
                return "TEXT"
    return kind


def convert(v, kind):
    if v == "":
        return None
    if kind == "INTEGER":
        return int(v)
    if kind == "REAL":
        return float(v)
    return v


def load(db, path, table):
    with open(path, newline="", encoding="utf-8-sig") as fh:
        sample = fh.read(65536)
        fh.seek(0)
        try:
            dialect = csv.Sniffer().sniff(sample, delimiters=",;\t|")
        except csv.Error:
            dialect = csv.excel
        rows = list(csv.reader(fh, dialect))
    if not rows:
        raise ValueError(f"{path} is empty")
    header, data = rows[0], rows[1:]
    cols = []
    for i, h in enumerate(header):
        c = snake(h, i)
        while c in cols:
            c += "_2"
        cols.append(c)
    width = len(cols)
    data = [(r + [""] * width)[:width] for r in data if any(cell.strip() for cell in r)]
    kinds = [infer(r[i] for r in data) for i in range(width)]
    db.execute(f'DROP TABLE IF EXISTS "{table}"')
    db.execute(f'CREATE TABLE "{table}" (' + ", ".join(f'"{c}" {k}' for c, k in zip(cols, kinds)) + ")")
    db.executemany(
        f'INSERT INTO "{table}" VALUES (' + ", ".join("?" * width) + ")",
        ([convert(v, k) for v, k in zip(r, kinds)] for r in data),
    )
    return header, cols, kinds, len(data)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("database")
    ap.add_argument("csv", nargs="+")
    ap.add_argument("--table", help="table name (only with a single CSV)")
    args = ap.parse_args(argv)
    if args.table and len(args.csv) > 1:
        ap.error("--table works with one CSV file at a time")
    db = sqlite3.connect(args.database)
    try:
        for path in args.csv:
            table = args.table or snake(Path(path).stem, 0)
            try:
                header, cols, kinds, n = load(db, path, table)
            except (OSError, ValueError, csv.Error, UnicodeDecodeError) as exc:
                print(f"load_csv: {path}: {exc}", file=sys.stderr)
                return 2
            print(f"table {table}: {n} rows")
            for h, c, k in zip(header, cols, kinds):
                print(f"  {c} {k}" + (f"   (from '{h}')" if h != c else ""))
        db.commit()
    finally:
        db.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
