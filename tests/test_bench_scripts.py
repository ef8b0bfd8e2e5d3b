"""The benchmarks in bench/ are run by hand, not by the suite: at least keep them runnable code.

A benchmark that no longer compiles goes unnoticed until someone needs its figure (one did).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"
SCRIPTS = sorted(BENCH.glob("*.py"))


def test_there_are_benchmarks():
    assert len(SCRIPTS) >= 10


@pytest.mark.parametrize("path", SCRIPTS, ids=[p.name for p in SCRIPTS])
def test_each_benchmark_compiles_and_says_what_it_prints(path):
    source = path.read_text("utf-8")
    tree = ast.parse(source, filename=str(path))  # SyntaxError names the file and line
    compile(tree, str(path), "exec")
    doc = ast.get_docstring(tree) or ""
    assert doc, f"{path.name} has no docstring saying what it measures"
    assert "__main__" in source, f"{path.name} does not run as a script"
