"""Past runs, found by their transcripts: ``list_runs(folder)`` and ``find_run(ref, folder)``.

A run's id is its transcript's path below the folder, without ``.jsonl``: ``run-20261202-…`` in
the user state folder where ``run`` writes them, a line's id in a batch's
``RESULTS.transcripts/``, ``eval-1/with_skill/transcript`` in an eval's folder. A file counts as
a transcript when its first event is ``run_start``; sub-agents' transcripts (in ``*.subagents/``
beside their parent's) belong to the parent's run and are not listed on their own.

Listing reads only each file's head (the start and the task) and its last line (``run_end``),
so a folder of large transcripts lists quickly. A run with no ``run_end`` is still going, or was
killed: its outcome is ``unfinished``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skillctl.errors import TranscriptError
from skillctl.nesting import loads_json

SUFFIX = ".jsonl"
SUBAGENTS = ".subagents"
UNFINISHED = "unfinished"
_START = b'{"type": "run_start"'
_HEAD_LINES = 8  # run_start, then the system and user messages: the task is within these
_TAIL_CHUNK = 64 * 1024


def runs_home() -> Path:
    """Where ``skillctl run`` writes transcripts when not told (``--transcript``)."""
    from platformdirs import user_state_dir

    return Path(user_state_dir("skillctl")) / "runs"


@dataclass(frozen=True)
class RunEntry:
    """One past run as a list shows it; ``tokens`` is the sum of the context sizes sent."""

    id: str
    path: Path
    started: float | None
    model: str
    task: str
    outcome: str
    steps: int | None
    tokens: int | None
    duration_s: float | None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "transcript": str(self.path), "started": self.started, "model": self.model,
                "task": self.task, "outcome": self.outcome, "steps": self.steps, "tokens": self.tokens,
                "duration_s": self.duration_s}


def is_transcript(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(len(_START)) == _START
    except OSError:
        return False


def transcripts(folder: Path) -> list[Path]:
    """Every transcript below ``folder`` (sub-agents' left out), links not followed."""
    found = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.endswith(SUBAGENTS))
        for name in sorted(files):
            path = Path(root) / name
            if name.endswith(SUFFIX) and not path.is_symlink() and is_transcript(path):
                found.append(path)
    return found


def run_id(path: Path, folder: Path) -> str:
    try:
        rel = path.resolve().relative_to(folder.resolve())
    except ValueError:
        rel = Path(path.name)
    return rel.as_posix().removesuffix(SUFFIX)


def _event(line: bytes) -> dict[str, Any] | None:
    try:
        ev = loads_json(line)
    except ValueError:
        return None  # a line cut short (the run is writing it) or not JSON
    return ev if isinstance(ev, dict) else None


def _last_line(fh: Any, size: int) -> bytes:
    """The file's last non-empty line, read backwards from its end in chunks."""
    end, tail = size, b""
    while end > 0:
        start = max(0, end - _TAIL_CHUNK)
        fh.seek(start)
        tail = fh.read(end - start) + tail
        end = start
        stripped = tail.rstrip(b"\n")
        cut = stripped.rfind(b"\n")
        if cut >= 0:
            return stripped[cut + 1:]
    return tail.rstrip(b"\n")


def entry(path: Path, folder: Path) -> RunEntry:
    """The run ``path`` records, from its head and its last line."""
    with open(path, "rb") as fh:
        head = [_event(fh.readline()) for _ in range(_HEAD_LINES)]
        size = os.fstat(fh.fileno()).st_size
        end = _event(_last_line(fh, size))
    start = head[0] or {}
    task = next((e["message"].get("content", "") for e in head if e and e.get("type") == "message"
                 and isinstance(e.get("message"), dict) and e["message"].get("role") == "user"), "")
    finished = end is not None and end.get("type") == "run_end"
    return RunEntry(
        id=run_id(path, folder), path=path, started=start.get("time"), model=str(start.get("model", "")),
        task=str(task), outcome=str(end.get("outcome")) if finished else UNFINISHED,  # type: ignore[union-attr]
        steps=end.get("steps") if finished else None,  # type: ignore[union-attr]
        tokens=sum(end.get("context_sizes") or []) if finished else None,  # type: ignore[union-attr]
        duration_s=end.get("duration_s") if finished else None,  # type: ignore[union-attr]
    )


def list_runs(folder: Path) -> list[RunEntry]:
    """The runs recorded below ``folder``, newest first."""
    if not folder.is_dir():
        return []
    entries = [entry(p, folder) for p in transcripts(folder)]
    return sorted(entries, key=lambda e: (e.started or 0.0, e.id), reverse=True)


def find_run(ref: str, folder: Path) -> Path:
    """The transcript ``ref`` names: a path to one, a run id below ``folder``, or the start of
    exactly one run id there."""
    given = Path(ref)
    for candidate in (given, folder / f"{ref}{SUFFIX}"):
        if candidate.is_file():
            if not is_transcript(candidate):
                raise TranscriptError(f"{candidate} is not a skillctl transcript (its first event is not run_start)")
            return candidate
    if given.suffix == SUFFIX:
        raise TranscriptError(f"no transcript file {ref}; give a transcript file or a run id from: skillctl runs list")
    matches = [p for p in transcripts(folder) if run_id(p, folder).startswith(ref)] if folder.is_dir() else []
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise TranscriptError(f"no run {ref!r} in {folder}; see: skillctl runs list"
                              + ("" if folder != runs_home() else " (or --transcripts DIR for a batch's or an eval's)"))
    shown = ", ".join(run_id(p, folder) for p in matches[:5]) + (", …" if len(matches) > 5 else "")
    raise TranscriptError(f"{ref!r} starts {len(matches)} run ids in {folder} ({shown}); give more of it")
