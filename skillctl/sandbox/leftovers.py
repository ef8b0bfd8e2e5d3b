"""What a run leaves on the host besides its container, written down so it can be removed later.

A run with network egress starts a proxy process, writes a folder (the per-run CA and its key)
and adds firewall rules. Its own ``finally`` removes them; a run killed with SIGKILL cannot. So
before creating any of them the run records them here — one JSON file per run, in the user state
folder (``SKILLCTL_LEFTOVERS_DIR`` overrides it) — and the reaper, at the next sandbox start,
removes those of runs whose owner is gone or whose expiry passed (the rule the reaper applies to
containers, ``reaper.orphan_reason``).

The reaper acts on these files, so it trusts them only so far: processes are killed only if their
start time still matches (a reused pid is left alone), folders are removed only when their name
starts with ``skillctl-``, and firewall entries are deletions of rules (``-D``), never commands.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Mapping

from skillctl.sandbox.firewall import Rule, delete_rules
from skillctl.sandbox.reaper import orphan_reason, process_start_time

LEFTOVERS_DIR_ENV = "SKILLCTL_LEFTOVERS_DIR"
FOLDER_PREFIX = "skillctl-"


def leftovers_dir() -> Path:
    explicit = os.environ.get(LEFTOVERS_DIR_ENV)
    if explicit:
        return Path(explicit)
    from platformdirs import user_state_dir

    return Path(user_state_dir("skillctl")) / "leftovers"


@dataclass
class Leftovers:
    run_id: str
    labels: dict[str, str]  # the run's labels (owner, expiry, run id…), as on its container
    processes: list[tuple[int, str]] = field(default_factory=list)  # (pid, start time in ticks)
    folders: list[str] = field(default_factory=list)
    firewall: list[list[str]] = field(default_factory=list)  # Rule.to_list()

    def save(self, directory: Path | None = None) -> Path:
        """Write (or rewrite) the record atomically; call it before creating what it lists."""
        folder = directory or leftovers_dir()
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        path = folder / f"{self.run_id}.json"
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=".json")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(asdict(self), fh)
        os.replace(tmp, path)
        return path

    def discard(self, directory: Path | None = None) -> None:
        (directory or leftovers_dir()).joinpath(f"{self.run_id}.json").unlink(missing_ok=True)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Leftovers":
        return cls(
            run_id=str(data["run_id"]),
            labels={str(k): str(v) for k, v in dict(data.get("labels") or {}).items()},
            processes=[(int(pid), str(start)) for pid, start in data.get("processes") or []],
            folders=[str(f) for f in data.get("folders") or []],
            firewall=[list(map(str, r)) for r in data.get("firewall") or []],
        )

    def remove(self) -> list[str]:
        """Remove everything listed; returns the problems (cleanup goes on regardless)."""
        problems: list[str] = []
        for pid, start in self.processes:
            if process_start_time(pid) == start:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                except OSError as exc:
                    problems.append(f"cannot stop process {pid}: {exc}")
        rules = []
        for items in self.firewall:
            try:
                rules.append(Rule.from_list(items))
            except ValueError as exc:
                problems.append(str(exc))
        problems += delete_rules(rules)
        for folder in self.folders:
            path = Path(folder)
            if path.is_absolute() and path.name.startswith(FOLDER_PREFIX):
                shutil.rmtree(path, ignore_errors=True)
        return problems


def reap_leftovers(now: float, *, labels: Mapping[str, str] | None = None, directory: Path | None = None) -> list[str]:
    """Remove the leftovers of every orphaned or expired run (optionally only those carrying
    ``labels``); returns their run ids. Unreadable records are left for a person to look at."""
    folder = directory or leftovers_dir()
    removed: list[str] = []
    try:
        paths = sorted(folder.glob("*.json"))
    except OSError:
        return removed
    for path in paths:
        try:
            entry = Leftovers.from_dict(json.loads(path.read_text("utf-8")))
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if any(entry.labels.get(k) != v for k, v in (labels or {}).items()):
            continue
        if orphan_reason(entry.labels, now) is None:
            continue
        entry.remove()
        path.unlink(missing_ok=True)
        removed.append(entry.run_id)
    return removed
