"""Side by side: ``skillctl audit`` and Cisco's ``skill-scanner`` on the same folders.

Detection: the malicious-technique corpus (tests/data/audit-corpus), a skill counting as caught
when the tool reports a high or critical finding for it, per technique; then the held-out part
of it (``heldout.yaml``: skills written without reading the rules, for the techniques of issue
26), per category, with the benign look-alikes written beside them (a look-alike with a high or
critical finding is a false alarm). False alarms: benign
skills (the vendored real skills, plus any folders given with --benign, e.g. public skill
repositories fetched into /tmp) with a high or critical finding. Speed: skills per minute of CPU
time (skillctl in this process; skill-scanner as a child process, its CPU time from
``RUSAGE_CHILDREN``), one core each.

skill-scanner is never a dependency of skillctl: install it in a venv of its own and pass its
executable. It runs with its static analyzers only - the defaults (YAML + YARA patterns,
bytecode, command pipelines) plus ``--use-behavioral`` (AST dataflow) and ``--use-trigger``
(generic descriptions); no LLM, no VirusTotal, no AI Defense, no OSV (all off by default and need
keys or the network).

    python3 -m venv /tmp/cisco && /tmp/cisco/bin/pip install cisco-ai-skill-scanner==2.3.2
    python bench/audit_compare.py --cisco /tmp/cisco/bin/skill-scanner --benign /tmp/skills-repos/*

``--labelled DIR`` adds a corpus that is not ours: skills with an ``_expected.json`` saying whether
they are safe (skill-scanner's repository ships one under ``evals/skills``).

Prints Markdown tables, then the list of benign skills each tool alarmed on (to hand-check),
then ``skillctl_detected=A/N cisco_detected=B/N skillctl_heldout=E/H cisco_heldout=F/H
skillctl_lookalike_alarms=G/L cisco_lookalike_alarms=I/L skillctl_alarms=C/M cisco_alarms=D/M``.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import yaml

from skillctl.audit import Severity, audit_folder, default_rules
from skillctl.skill import discover

HERE = Path(__file__).resolve().parent.parent
CORPUS = HERE / "tests" / "data" / "audit-corpus"
REAL = HERE / "tests" / "data" / "real-skills"
_HIGH = {"HIGH", "CRITICAL"}


def folders(root: Path) -> list[Path]:
    return [f for f, _s, problem in discover(root) if f is not None and problem is None]


def ours(root: Path) -> tuple[dict[str, bool], float, int]:
    """skill folder path -> has a high/critical finding; CPU seconds; skills."""
    skills = folders(root)
    default_rules()
    start = time.process_time()
    result = {str(f.resolve()): audit_folder(f).fails(Severity.HIGH) for f in skills}
    return result, time.process_time() - start, len(skills)


def cisco(exe: str, root: Path) -> tuple[dict[str, bool], float, int]:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "report.json"
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run([exe, "scan-all", str(root), "--recursive", "--use-behavioral", "--use-trigger",
                        "--format", "json", "--output-json", str(out)],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        data = json.loads(out.read_text()) if out.exists() else {"results": []}
    used = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    result = {str(Path(r["skill_path"]).resolve()): r.get("max_severity") in _HIGH for r in data["results"]}
    return result, used, len(result)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cisco", required=True, help="path of the skill-scanner executable")
    parser.add_argument("--benign", nargs="*", type=Path, default=[], help="more folders of benign skills")
    parser.add_argument("--labelled", type=Path, help="skills labelled by an `_expected.json` with `expected_safe` "
                        "(skill-scanner's own evals/skills): detection and alarms on a corpus that is not ours")
    args = parser.parse_args()

    manifest = yaml.safe_load((CORPUS / "techniques.yaml").read_text())["techniques"]
    ours_corpus, _, _ = ours(CORPUS)
    cisco_corpus, _, _ = cisco(args.cisco, CORPUS)
    print("| technique | skills | skillctl audit | cisco skill-scanner |\n| --- | --- | --- | --- |")
    totals = defaultdict(int)
    for tech, skills in manifest.items():
        paths = [str((CORPUS / name).resolve()) for name in skills]
        a = sum(ours_corpus.get(p, False) for p in paths)
        b = sum(cisco_corpus.get(p, False) for p in paths)
        totals["n"] += len(paths)
        totals["a"] += a
        totals["b"] += b
        print(f"| {tech} | {len(paths)} | {a} | {b} |")
    print(f"| **all** | {totals['n']} | {totals['a']} | {totals['b']} |\n")

    heldout = yaml.safe_load((CORPUS / "heldout.yaml").read_text())
    print("| held-out category | malicious | skillctl caught | cisco caught | look-alikes | skillctl alarms | "
          "cisco alarms |\n| --- | --- | --- | --- | --- | --- | --- |")
    for cat, names in heldout["malicious"].items():
        bad = [str((CORPUS / n).resolve()) for n in names]
        good = [str((CORPUS / n).resolve()) for n in heldout["benign"].get(cat, [])]
        row = [sum(r.get(p, False) for p in group) for group in (bad, good) for r in (ours_corpus, cisco_corpus)]
        for key, value in zip(("ha", "hb", "la", "lb"), row):
            totals[key] += value
        totals["hn"] += len(bad)
        totals["ln"] += len(good)
        print(f"| {cat} | {len(bad)} | {row[0]} | {row[1]} | {len(good)} | {row[2]} | {row[3]} |")
    print(f"| **all** | {totals['hn']} | {totals['ha']} | {totals['hb']} | {totals['ln']} | {totals['la']} | "
          f"{totals['lb']} |\n")

    if args.labelled:
        labels = {str(p.parent.resolve()): json.loads(p.read_text()).get("expected_safe", True)
                  for p in args.labelled.rglob("_expected.json")}
        a_hits, _, _ = ours(args.labelled)
        b_hits, _, _ = cisco(args.cisco, args.labelled)
        bad = [p for p, safe in labels.items() if not safe]
        good = [p for p, safe in labels.items() if safe]
        print(f"| labelled set ({args.labelled.name}) | skills | skillctl audit | cisco skill-scanner |\n| --- | --- | --- | --- |")
        print(f"| malicious, caught at high+ | {len(bad)} | {sum(a_hits.get(p, False) for p in bad)} | {sum(b_hits.get(p, False) for p in bad)} |")
        print(f"| safe, alarmed at high+ | {len(good)} | {sum(a_hits.get(p, False) for p in good)} | {sum(b_hits.get(p, False) for p in good)} |\n")

    print("| benign set | skills | skillctl alarms | cisco alarms | skillctl skills/min | cisco skills/min |\n"
          "| --- | --- | --- | --- | --- | --- |")
    alarmed: dict[str, list[str]] = {"skillctl": [], "cisco": []}
    all_a = all_b = all_n = all_m = 0
    for root in [REAL, *args.benign]:
        a, a_cpu, n = ours(root)
        b, b_cpu, m = cisco(args.cisco, root)
        alarmed["skillctl"] += sorted(p for p, hit in a.items() if hit)
        alarmed["cisco"] += sorted(p for p, hit in b.items() if hit)
        all_a += sum(a.values())
        all_b += sum(b.values())
        all_n += n
        all_m += m
        print(f"| {root.name} | {n} | {sum(a.values())} ({sum(a.values()) / max(n, 1):.1%}) | "
              f"{sum(b.values())} ({sum(b.values()) / max(m, 1):.1%}) | {n / a_cpu * 60:.0f} | {m / max(b_cpu, 1e-9) * 60:.0f} |")
    for tool, paths in alarmed.items():
        print(f"\n{tool} alarmed on {len(paths)} benign skills:")
        for p in paths:
            print(f"  {p}")
    print(f"\nskillctl_detected={totals['a']}/{totals['n']} cisco_detected={totals['b']}/{totals['n']} "
          f"skillctl_heldout={totals['ha']}/{totals['hn']} cisco_heldout={totals['hb']}/{totals['hn']} "
          f"skillctl_lookalike_alarms={totals['la']}/{totals['ln']} cisco_lookalike_alarms={totals['lb']}/{totals['ln']} "
          f"skillctl_alarms={all_a}/{all_n} cisco_alarms={all_b}/{all_m}")


if __name__ == "__main__":
    main()
