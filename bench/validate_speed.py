"""Benchmark: validation speed against the reference validator (PyPI ``skills-ref``).

Two ratios, skillctl / skills-ref, each measured against its baseline in the same run:

- ``validate_process_ratio``: one ``skillctl validate SKILL`` process against one
  ``agentskills validate SKILL`` process on the same folder — what a pre-commit hook pays per
  commit (interpreter start, imports, one skill) — over four real skills, two with Python scripts
  and two of Markdown only. Runs alternate; the sums of the medians are compared.
- ``validate_inprocess_ratio``: time per skill in one process on a large tree — skillctl's
  ``check_skill`` against skills-ref's ``validate`` on every skill of ``tests/data/real-skills``
  copied ``--copies`` times. Rounds alternate; the best round of each is compared.

Times are CPU time (user + system) of the process: the machines these run on are shared, and the
wall clock there mostly measures the other tenants. Both commands run from bytecode, as installed
tools do: pip compiled skills-ref's modules when it installed them, and the bench compiles
skillctl's in place (``__pycache__`` folders, ignored by git) — this checkout is an editable
install, and where PYTHONDONTWRITEBYTECODE is set it would otherwise be compiled from source on
every run; ``--source`` skips that. Also printed, for the record: ``skillctl --help`` (target
≤ 150 ms, CPU time of the process) and the share of the skill environments check (SK251/SK252:
every Python script's imports scanned, and the scripts that have some to report checked to
parse). Targets: process ratio ≤ 1.0, in-process ≤ 1.2.

    python bench/validate_speed.py [--runs 15] [--copies 5] [--rounds 5] [--source]

Not a test: nothing here asserts on time.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REAL = ROOT / "tests" / "data" / "real-skills"
# real skills as a pre-commit meets them: two with Python scripts, two of Markdown only
ONES = [
    REAL / "github+awesome-copilot" / "skills" / "convert-excel-to-md",
    REAL / "github+awesome-copilot" / "skills" / "eyeball",
    REAL / "obra+superpowers" / "skills" / "using-git-worktrees",
    REAL / "getsentry+skills" / "skills" / "security-review",
]


def _bin(name: str) -> str:
    path = Path(sys.executable).with_name(name)
    found = str(path) if path.exists() else shutil.which(name)
    if not found:
        sys.exit(f"{name} not found: pip install -e '.[test]' (skills-ref provides agentskills)")
    return found


def _compile_skillctl() -> None:
    import compileall

    import skillctl

    compileall.compile_dir(Path(skillctl.__file__).parent, quiet=1)


def _cpu(cmd: list[str]) -> float:
    """CPU time (user + system) the command's process used: on a shared, loaded machine the wall
    clock mostly measures the other tenants."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def process_ratio(runs: int) -> tuple[dict[str, tuple[float, float]], float, float]:
    """Per skill (median skillctl, median skills-ref); the ratio of their sums; --help."""
    per_skill: dict[str, tuple[float, float]] = {}
    for one in ONES:
        ours = [_bin("skillctl"), "validate", str(one)]
        ref = [_bin("agentskills"), "validate", str(one)]
        for cmd in (ours, ref):  # warm the file cache
            _cpu(cmd)
        a, b = [], []
        for _ in range(runs):
            a.append(_cpu(ours))
            b.append(_cpu(ref))
        per_skill[one.name] = (statistics.median(a), statistics.median(b))
    help_cmd = [_bin("skillctl"), "--help"]
    help_s = statistics.median(_cpu(help_cmd) for _ in range(runs))
    ratio = sum(a for a, _ in per_skill.values()) / sum(b for _, b in per_skill.values())
    return per_skill, ratio, help_s


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
            start = time.process_time()
            for folder in folders:
                check_skill(folder)
            ours.append(time.process_time() - start)
            start = time.process_time()
            for folder in folders:
                reference_validate(folder)
            ref.append(time.process_time() - start)
    n = len(folders)
    return n, min(ours) / n, min(ref) / n, min(ours) / min(ref)


def environment_share(copies: int, rounds: int) -> float:
    """Per-skill time of the skill environments check (SK251/SK252: every script scanned), so the
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
                start = time.process_time()
                for folder in folders:
                    check_skill(folder)
                took = (time.process_time() - start) / len(folders)
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
    parser.add_argument("--source", action="store_true", help="do not compile skillctl's modules first (as this environment has them)")
    args = parser.parse_args()
    os.environ.pop("SKILLCTL_PROFILE", None)

    if not args.source:
        _compile_skillctl()
    per_skill, r1, help_s = process_ratio(args.runs)
    for name, (ours_s, ref_s) in per_skill.items():
        print(f"process: {name}: skillctl validate {ours_s * 1000:.0f} ms, agentskills validate {ref_s * 1000:.0f} ms (CPU, median of {args.runs})")
    print(f"help: skillctl --help {help_s * 1000:.0f} ms (CPU, median; target <= 150 ms)")
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
