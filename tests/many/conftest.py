"""Fixtures for many runs: a copy of the example skill ``tally`` with evals, scripted agents and
judges, and user folders kept inside the test's temp dir."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from model_server import model_server  # noqa: F401 - the loopback model server fixture, per test
from sandbox_fixtures import on_ci

REPO = Path(__file__).resolve().parents[2]
TALLY = REPO / "skills" / "tally"
# The agent's script: count with the skill's script (there only with the skill), write the count.
COUNT_WITH_SKILL = ("python3 ${SKILLS_DIR:-/skills}/tally/scripts/tally.py --json notes.txt "
                    "| python3 -c 'import json,sys; print(json.load(sys.stdin)[\"words\"])' > count.txt")


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.delenv("SKILLCTL_REGISTRY", raising=False)
    monkeypatch.delenv("SKILLCTL_MODEL", raising=False)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)


def write_yaml(path: Path, steps: list[dict[str, Any]]) -> Path:
    path.write_text(yaml.safe_dump({"steps": steps}, sort_keys=False), "utf-8")
    return path


def verdict(v: str, evidence: str) -> dict[str, Any]:
    """A scripted judge's turn: a call of the grade tool."""
    return {"tool": "grade", "arguments": {"verdict": v, "evidence": evidence}}


def tally_with_evals(tmp_path: Path, cases: list[dict[str, Any]] | None = None, version: str = "1.0.0") -> Path:
    """A copy of tally (metadata.version = ``version``) with evals/evals.json and one input file."""
    skill = tmp_path / "skills" / "tally"
    shutil.copytree(TALLY, skill)
    md = skill / "SKILL.md"
    md.write_text(md.read_text("utf-8").replace('version: "1.0.0"', f'version: "{version}"'), "utf-8")
    (skill / "evals" / "files").mkdir(parents=True)
    (skill / "evals" / "files" / "notes.txt").write_text("one two three four\n", "utf-8")
    if cases is None:
        cases = [
            {"id": 1, "prompt": "How many words are in notes.txt? Write the count to count.txt.",
             "expected_output": "4, in count.txt", "files": ["evals/files/notes.txt"],
             "expectations": ["The answer gives the word count",
                              {"text": "count.txt holds 4", "check": "grep -qx 4 count.txt"}]},
            {"id": "greeting", "prompt": "Say hello.", "expected_output": "A greeting."},
        ]
    (skill / "evals" / "evals.json").write_text(json.dumps({"skill_name": "tally", "evals": cases}, indent=1), "utf-8")
    return skill


# Ray advertises the machine's outward address even for a cluster on one machine; this keeps
# every Ray node, driver and worker of the tests on loopback. Read when Ray is imported, so it
# is set here, before any test imports it (nodes started by the tests inherit it).
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")

HEALTH_CHECKS = {"health_check_initial_delay_ms": 0, "health_check_period_ms": 500, "health_check_failure_threshold": 3}
NODE_ARGS = {"num_cpus": 1, "object_store_memory": 80 * 1024 * 1024, "node_ip_address": "127.0.0.1"}


def descendants(pid: int) -> set[int]:
    """Every process below ``pid`` (from /proc), for checking that nothing is left behind."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            ppid = int(stat[stat.rfind(")") + 2:].split()[1])
            children.setdefault(ppid, []).append(int(entry.name))
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def is_ray(pid: int) -> bool:
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return False
    return "ray::" in cmd or "/ray/" in cmd


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2:].split()[0] != "Z"


def require_ray() -> None:
    """Ray is an optional extra: skipped without it on a developer machine, a failure on CI
    (``scripts/setup.sh --tests`` installs ``skillctl[ray]``)."""
    try:
        import ray  # noqa: F401
    except ImportError:
        reason = "Ray is not installed (pip install 'skillctl[ray]')"
        pytest.fail(reason) if on_ci() else pytest.skip(reason)


@pytest.fixture(scope="session")
def ray_cluster():
    """A real Ray cluster of two nodes on this machine (one CPU each, loopback, no dashboard),
    shut down at the end; then no process it started may be left."""
    require_ray()
    from ray.cluster_utils import Cluster

    before = descendants(os.getpid())
    cluster = Cluster(initialize_head=True, head_node_args={**NODE_ARGS, "include_dashboard": False,
                                                            "_system_config": HEALTH_CHECKS})
    cluster.worker = cluster.add_node(**NODE_ARGS)
    cluster.wait_for_nodes()
    try:
        yield cluster
    finally:
        import ray

        if ray.is_initialized():
            ray.shutdown()
        started = {p for p in descendants(os.getpid()) - before if is_ray(p)}
        cluster.shutdown()
        deadline = time.monotonic() + 60
        while any(alive(p) for p in started) and time.monotonic() < deadline:
            time.sleep(0.2)
        left = [p for p in started if alive(p)]
        assert not left, f"Ray left processes behind: {left}"
