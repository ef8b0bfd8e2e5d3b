"""The example skills in skills/: valid under --strict, and their scripts do what SKILL.md says.

The scripts run as SKILL.md tells the agent to run them (``python3 /skills/NAME/scripts/...``),
on a small input each, so the examples stay genuinely useful and not just well-formed.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path

import pytest

from skillctl.skill.validate import check_skill

SKILLS = Path(__file__).resolve().parents[2] / "skills"
EXPECTED = ["csv-sql", "find-excerpts", "json-shape", "tally"]


def run(skill: str, script: str, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    path = SKILLS / skill / "scripts" / script
    return subprocess.run(["python3", str(path), *args], cwd=cwd, capture_output=True, text=True, timeout=60)


def test_all_examples_pass_validate_strict(invoke) -> None:
    result = invoke("validate", "--strict", "--format", "json", SKILLS)
    reports = json.loads(result.stdout)
    assert sorted(r["name"] for r in reports) == EXPECTED
    assert [(r["name"], r["diagnostics"]) for r in reports if r["diagnostics"]] == []
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("name", EXPECTED)
def test_example_loads_as_a_typed_skill(name: str) -> None:
    skill = check_skill(SKILLS / name).skill
    assert skill is not None and skill.name == name and skill.version
    assert any(f.startswith("scripts/") for f in skill.files)


def test_csv_sql_loads_csv_into_sqlite(tmp_path: Path) -> None:
    (tmp_path / "sales.csv").write_text("Region,Amount,Day\nnorth,10.5,2024-01-01\nsouth,3,2024-01-02\nnorth,4.5,2024-01-03\n")
    result = run("csv-sql", "load_csv.py", "data.db", "sales.csv", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "table sales: 3 rows" in result.stdout
    with sqlite3.connect(tmp_path / "data.db") as db:
        totals = db.execute("SELECT region, SUM(amount) FROM sales GROUP BY region ORDER BY region").fetchall()
        kinds = db.execute("SELECT typeof(amount), typeof(day) FROM sales LIMIT 1").fetchone()
    assert totals == [("north", 15.0), ("south", 3.0)]
    assert kinds == ("real", "text")


def test_find_excerpts_prints_numbered_matches(tmp_path: Path) -> None:
    (tmp_path / "doc.txt").write_text("alpha\nthe prefix cache matters\nbeta\ngamma\nPrefix caching again\n")
    result = run("find-excerpts", "excerpts.py", "-i", "prefix cach", "doc.txt", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    marked = [line for line in result.stdout.splitlines() if line.startswith(">")]
    assert [line.split()[1] for line in marked] == ["2", "5"]
    assert result.stdout.rstrip().endswith("2 matches")


def test_json_shape_summarises_and_extracts(tmp_path: Path) -> None:
    (tmp_path / "d.json").write_text(json.dumps({"items": [{"name": "a", "price": 9.99}, {"name": "b", "price": 3}], "total": 2}))
    shape = run("json-shape", "shape.py", "d.json", cwd=tmp_path)
    assert shape.returncode == 0, shape.stderr
    rows = {line.split()[0]: line.split()[1:3] for line in shape.stdout.splitlines()}
    assert rows["$.items[].price"] == ["number", "x2"] and rows["$.items[].name"] == ["string", "x2"]
    got = run("json-shape", "shape.py", "--get", "$.items[].name", "d.json", cwd=tmp_path)
    assert got.stdout.split() == ["a", "b"]


def test_tally_counts_words_and_reports_unreadable_files(tmp_path: Path) -> None:
    (tmp_path / "t.txt").write_text("Don't stop the state-of-the-art cache.\nThe cache is the cache.\n")
    result = run("tally", "tally.py", "--json", "t.txt", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"file": "t.txt", "words": 10, "lines": 2, "characters": 63}
    top = run("tally", "tally.py", "--top", "1", "t.txt", cwd=tmp_path)
    assert top.stdout.splitlines()[-1].split() == ["3", "cache"]
    missing = run("tally", "tally.py", "missing.txt", cwd=tmp_path)
    assert missing.returncode == 2 and "missing.txt" in missing.stderr
