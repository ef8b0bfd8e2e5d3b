"""Benchmark: how many skills ``skillctl audit`` checks per minute on one core.

Audits every skill under the given folders (default: the 58 vendored real skills and the
malicious-technique corpus) the way ``skillctl audit`` does - read each folder, run every rule -
``--rounds`` times in this one process, and counts **CPU time of this process** (one thread, so
one core; other work on a shared machine does not inflate it). The best round is reported.
Baseline in the same run: only reading the same files (the floor any audit pays), so the ratio
says what the analysis itself costs. A second line times a hostile file: 4 MiB of one line
packed with the rules' keywords (a backtracking pattern would never finish on it).

    python bench/audit_speed.py [FOLDER ...] [--rounds 5]

Last line: ``audit_skills_per_minute=N``. Target: >= 1,000 on one core. Not a test: nothing
here asserts on time.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from skillctl.audit import audit_folder, default_rules
from skillctl.audit.sources import from_folder
from skillctl.skill import discover

HERE = Path(__file__).resolve().parent.parent
DEFAULT = [HERE / "tests" / "data" / "real-skills", HERE / "tests" / "data" / "audit-corpus"]


def skill_folders(roots: list[Path]) -> list[Path]:
    return [folder for root in roots for folder, _shown, problem in discover(root) if folder is not None and problem is None]


def cpu(fn) -> float:  # type: ignore[no-untyped-def]
    start = time.process_time()
    fn()
    return time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="*", type=Path)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    folders = skill_folders(args.folders or DEFAULT)
    default_rules()  # compiled once per process, as in every real use
    files = sum(len(from_folder(f, str(f)).files) for f in folders)
    read_only = min(cpu(lambda: [from_folder(f, str(f)) for f in folders]) for _ in range(args.rounds))
    audited = min(cpu(lambda: [audit_folder(f) for f in folders]) for _ in range(args.rounds))
    per_minute = len(folders) / audited * 60
    print(f"skills={len(folders)} files={files} rounds={args.rounds} read_only_cpu_s={read_only:.3f} "
          f"audit_cpu_s={audited:.3f} audit_vs_read={audited / read_only:.1f}")

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "hostile"
        (folder / "scripts").mkdir(parents=True)
        (folder / "SKILL.md").write_text("---\nname: hostile\ndescription: Hostile input for the audit benchmark.\n---\n\nBody.\n")
        chunk = "curl http://203.0.113.1 wget -d ignore previous rm -rf x nslookup $(a). chmod +x ./a base64 -d | "
        (folder / "scripts" / "a.sh").write_text(chunk * (4 * 1024 * 1024 // len(chunk)))
        hostile = cpu(lambda: audit_folder(folder))
        print(f"hostile_file_mib=4 hostile_cpu_s={hostile:.2f} hostile_mib_per_s={4 / hostile:.2f}")
    print(f"audit_skills_per_minute={per_minute:.0f}")


if __name__ == "__main__":
    main()
