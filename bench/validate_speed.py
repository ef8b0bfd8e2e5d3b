"""Benchmark: validation speed against the reference validator (PyPI ``skills-ref``).

Two ratios, skillctl / skills-ref, each measured against its baseline in the same run:

- ``validate_process_ratio``: one ``skillctl validate SKILL`` process against one
  ``agentskills validate SKILL`` process on the same folder — what a pre-commit hook pays per
  commit (interpreter start, imports, one skill). Runs alternate; medians compared.
- ``validate_inprocess_ratio``: time per skill in one process on a large tree — skillctl's
  ``check_skill`` against skills-ref's ``validate`` on every skill of ``tests/data/real-skills``
  copied ``--copies`` times. Rounds alternate; the best round of each is compared.

Also printed, for the record: ``skillctl --help`` in milliseconds (target ≤ 150 ms; an absolute
time, so only indicative on a loaded machine). Targets: process ratio ≤ 1.0, in-process ≤ 1.2.

    python bench/validate_speed.py [--runs 15] [--copies 5] [--rounds 5]

Not a test: nothing here asserts on time.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REAL = ROOT / "tests" / "data" / "real-skills"
# a real skill with a script, references and a body of ordinary length
ONE = REAL / "github+awesome-copilot" / "skills" / "convert-excel-to-md"


def _bin(name: str) -> str:
    path = Path(sys.executable).with_name(name)
    found = str(path) if path.exists() else shutil.which(name)
    if not found:
        sys.exit(f"{name} not found: pip install -e '.[test]' (skills-ref provides agentskills)")
    return found


def _wall(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start


def process_ratio(runs: int) -> tuple[float, float, float, float]:
    ours = [_bin("skillctl"), "validate", str(ONE)]
    ref = [_bin("agentskills"), "validate", str(ONE)]
    help_cmd = [_bin("skillctl"), "--help"]
    for cmd in (ours, ref, help_cmd):  # warm the file cache and .pyc files
        _wall(cmd)
    a, b, h = [], [], []
    for _ in range(runs):
        a.append(_wall(ours))
        b.append(_wall(ref))
        h.append(_wall(help_cmd))
    return statistics.median(a), statistics.median(b), statistics.median(a) / statistics.median(b), statistics.median(h)


def inprocess_ratio(copies: int, rounds: int) -> tuple[int, float, float, float]:
    from skills_ref.validator import validate as reference_validate

    from skillctl.skill import check_skill

    with tempfile.TemporaryDirectory(prefix="skillctl-bench-") as tmp:
        folders: list[Path] = []
        for i in range(copies):
            copy = Path(tmp) / f"copy{i}"
            shutil.copytree(REAL, copy)
            folders += sorted(p.parent for p in copy.rglob("SKILL.md"))
        # the same work for both: every skill folder, named directly
        for folder in folders[:5]:
            check_skill(folder), reference_validate(folder)
        ours, ref = [], []
        for _ in range(rounds):
            start = time.perf_counter()
            for folder in folders:
                check_skill(folder)
            ours.append(time.perf_counter() - start)
            start = time.perf_counter()
            for folder in folders:
                reference_validate(folder)
            ref.append(time.perf_counter() - start)
    n = len(folders)
    return n, min(ours) / n, min(ref) / n, min(ours) / min(ref)


def environment_share(copies: int, rounds: int) -> float:
    """Per-skill time of the skill environments check (SK251/SK252: every script parsed), so the
    figure above can be read apart from it."""
    from skillctl.skill import check_skill
    from skillctl.skill import validate as module

    folders = sorted(p.parent for p in REAL.rglob("SKILL.md")) * copies
    real = module._environment_findings
    best_with = best_without = float("inf")
    try:
        for _ in range(rounds):
            for mode in ("with", "without"):
                module._environment_findings = real if mode == "with" else (lambda *a: [])
                start = time.perf_counter()
                for folder in folders:
                    check_skill(folder)
                took = (time.perf_counter() - start) / len(folders)
                if mode == "with":
                    best_with = min(best_with, took)
                else:
                    best_without = min(best_without, took)
    finally:
        module._environment_findings = real
    return best_with - best_without


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=15, help="process runs of each command")
    parser.add_argument("--copies", type=int, default=5, help="copies of the 58 real skills for the in-process tree")
    parser.add_argument("--rounds", type=int, default=5, help="in-process rounds of each validator")
    args = parser.parse_args()
    os.environ.pop("SKILLCTL_PROFILE", None)

    ours_s, ref_s, r1, help_s = process_ratio(args.runs)
    print(f"process: skillctl validate {ours_s * 1000:.0f} ms, agentskills validate {ref_s * 1000:.0f} ms (median of {args.runs}, {ONE.name})")
    print(f"help: skillctl --help {help_s * 1000:.0f} ms (median; target <= 150 ms)")
    n, ours_p, ref_p, r2 = inprocess_ratio(args.copies, args.rounds)
    print(f"in-process: check_skill {ours_p * 1000:.2f} ms/skill, skills-ref validate {ref_p * 1000:.2f} ms/skill ({n} skills, best of {args.rounds})")
    env = environment_share(args.copies, args.rounds)
    print(
        f"of which the skill environments check (SK251/SK252) {env * 1000:.2f} ms/skill; "
        f"without it validate_inprocess_ratio would be {(ours_p - env) / ref_p:.2f}"
    )
    print(f"validate_process_ratio={r1:.2f} validate_inprocess_ratio={r2:.2f}")


if __name__ == "__main__":
    main()
