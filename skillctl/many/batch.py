"""``skillctl batch``: one run per line of a JSON Lines tasks file, results appended as runs
finish, resumable.

Tasks file: one JSON object per line (``schemas/task.schema.json``): ``task``, optional ``id``,
``skills``, ``files`` and ``model`` (default: the batch's). Files are staged into the run (and
so reach its transcript): like an eval case's, each must be inside the tasks file's folder
(``inputfiles``) unless the batch is run with ``allow_outside_files``.
Blank lines are skipped. Every line is checked before any run starts, and every bad line is
reported with its number. A line without ``id`` gets one from a hash of its content, so the
same line has the same id in the next run; two lines with one id are an error.

Results file (default ``TASKS.results.jsonl`` beside the tasks): one JSON object per finished
run — ``id``, ``line``, ``outcome``, ``exit_code``, ``answer``, ``steps`` (K), ``Z``,
``duration_s``, ``transcript`` (a file in ``RESULTS.transcripts/``), ``message``,
``attempts``/``retries`` (a run that lost its node), ``node``, ``skills``. A line is written,
flushed and fsynced as each run finishes, by one writer. Resuming: ids with a result are
skipped; runs that were cancelled are not recorded, so they run again. With ``retry_failed``
the lines whose last result says the run never happened (``failed``, ``error``, ``lost``) run
again; their new line is appended and the last line of an id is the one that counts. A last line cut short
by a crash is dropped (with a warning); any other unreadable line stops the batch rather than
risk the results.
"""

from __future__ import annotations

import json
import os
import secrets
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

from skillctl.errors import ConfigError, SkillctlError
from skillctl.fsutil import open_private, read_regular_text
from skillctl.schema import schema_problems
from skillctl.nesting import NestingError, loads_json
from skillctl.protocols import ResolvedSkill

from .engines import Engine
from .inputfiles import MISSING, OUTSIDE, locate
from .job import ERROR, FAILED, LOST, Job, JobResult, RunSettings, line_id, model_fields
from .progress import RunProgress

MAX_REPORTED_LINES = 10
# Outcomes that mean the run never happened; the batch's exit status is 1 when any occurred.
NOT_RUN = (FAILED, ERROR, LOST)
UNRECORDED = ("cancelled", "interrupted")


@lru_cache(maxsize=1)
def task_schema() -> dict[str, Any]:
    return json.loads(resources.files("skillctl.many").joinpath("schemas/task.schema.json").read_text("utf-8"))


@dataclass(frozen=True)
class Task:
    id: str
    line: int
    task: str
    model: str
    skills: tuple[str, ...] = ()
    files: tuple[Path, ...] = ()


def read_tasks(path: Path, *, default_model: str | None = None, allow_outside_files: bool = False) -> list[Task]:
    """Every task of ``path``; a ``ConfigError`` lists every bad line (``line N: what``)."""
    try:
        text = read_regular_text(path)
    except FileNotFoundError:
        raise ConfigError(f"tasks file {path} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read tasks file {path}: {exc}") from None
    base = path.resolve().parent
    problems: list[str] = []
    tasks: list[Task] = []
    seen: dict[str, int] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        task, why = _parse_line(raw, base, default_model, allow_outside_files)
        if task is None:
            problems.append(f"line {number}: {why}")
            continue
        if task.id in seen:
            problems.append(f"line {number}: id {task.id!r} is already used by line {seen[task.id]}; give each line its own id")
            continue
        seen[task.id] = number
        tasks.append(Task(task.id, number, task.task, task.model, task.skills, task.files))
    if problems:
        shown = "; ".join(problems[:MAX_REPORTED_LINES])
        more = f"; and {len(problems) - MAX_REPORTED_LINES} more" if len(problems) > MAX_REPORTED_LINES else ""
        raise ConfigError(f"{path}: {len(problems)} bad line(s): {shown}{more}")
    if not tasks:
        raise ConfigError(f"{path} holds no tasks; write one JSON object per line, e.g. {{\"task\": \"...\"}}")
    return tasks


def _parse_line(raw: str, base: Path, default_model: str | None, allow_outside_files: bool) -> tuple[Task | None, str]:
    try:
        obj = loads_json(raw)
    except NestingError as exc:
        return None, f"{exc.problem} (at column {exc.column})"
    except ValueError as exc:
        return None, f"not JSON ({exc.msg} at column {exc.colno})"
    problems = schema_problems(obj, task_schema())
    if problems:
        return None, "; ".join(problems)
    model = obj.get("model") or default_model
    if not model:
        return None, "no model: add \"model\" to the line or pass --model"
    if "model" in obj and model.startswith("script:"):
        script = Path(model.partition(":")[2])
        model = f"script:{script if script.is_absolute() else base / script}"
    files = []
    for i, name in enumerate(obj.get("files", [])):
        if allow_outside_files:
            p = Path(name) if Path(name).is_absolute() else base / name
            problem = None if p.exists() else MISSING
        else:
            p, problem = locate(base, name)
        if problem == OUTSIDE:
            return None, (f"files[{i}]: {name} is outside the tasks file's folder {base} (absolute, '..' or a link out of "
                          "it); move it there, or pass --allow-outside-files to stage it anyway")
        if problem == MISSING:
            return None, f"files[{i}]: {name} does not exist (paths are relative to the tasks file)"
        files.append(p)
    ident = str(obj["id"]) if "id" in obj else line_id(obj)
    return Task(ident, 0, obj["task"], model, tuple(obj.get("skills", ())), tuple(files)), ""


# ------------------------------------------------------------------------------ results


def default_results_path(tasks_path: Path) -> Path:
    stem = tasks_path.name[: -len(".jsonl")] if tasks_path.name.endswith(".jsonl") else tasks_path.name
    return tasks_path.with_name(f"{stem}.results.jsonl")


class ResultsFile:
    """The append-only results of a batch; one writer (the engine's calling thread)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.transcripts = path.with_name(path.name.removesuffix(".jsonl") + ".transcripts")

    def done_ids(self, warn: Callable[[str], None]) -> set[str]:
        """Ids with a recorded result. A torn last line (a crash mid-write) is cut off."""
        return set(self.latest(warn))

    def latest(self, warn: Callable[[str], None]) -> dict[str, dict[str, Any]]:
        """Each recorded id's last result (a retried line has several; the last one counts). A
        torn last line (a crash mid-write) is cut off."""
        if not self.path.exists():
            return {}
        data = self.path.read_bytes()
        if data and not data.endswith(b"\n"):
            keep = data.rfind(b"\n") + 1
            warn(f"{self.path}: its last line was cut short (the batch stopped while writing it); dropping it")
            with open(self.path, "r+b") as fh:
                fh.truncate(keep)
            data = data[:keep]
        done: dict[str, dict[str, Any]] = {}
        for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                record = loads_json(line)
                done[str(record["id"])] = record
            except (ValueError, KeyError, TypeError):
                raise ConfigError(f"{self.path}:{number} is not a result line; fix it or move the file away "
                                  "(the batch only appends to it)") from None
        return done

    def transcript_path(self, job_id: str) -> Path:
        return self.transcripts / f"{job_id}.jsonl"

    def append(self, record: Mapping[str, Any]) -> None:
        line = json.dumps(record, ensure_ascii=False) + "\n"
        with open_private(self.path, "a") as fh:  # answers can quote what the run fetched
            fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())


def save_transcript(path: Path, data: bytes) -> None:
    """A run's transcript, readable by its owner only, as the run itself writes it: it holds
    everything the agent saw, inputs and skill files included."""
    with open_private(path, "wb") as fh:
        fh.write(data)


def record_for(task: Task, result: JobResult, transcript: Path | None) -> dict[str, Any]:
    run = result.run or {}
    return {
        "id": task.id, "line": task.line, "outcome": result.outcome, "exit_code": result.exit_code,
        "answer": result.answer, "steps": result.steps, "tokens_used": result.Z, "Z": result.Z, "duration_s": round(result.duration_s, 3),
        "transcript": str(transcript) if transcript else None, "message": result.message,
        "attempts": result.attempts, "retries": result.retries, "node": result.node,
        "skills": run.get("skills", []), "warnings": run.get("warnings", []),
    }


# ------------------------------------------------------------------------------ the batch


@dataclass
class BatchSummary:
    batch_id: str
    results_path: Path
    total: int
    skipped: int
    outcomes: Counter[str] = field(default_factory=Counter)
    retried: int = 0  # lines run again because their last result said they did not run

    @property
    def not_run(self) -> int:
        return sum(self.outcomes[o] for o in NOT_RUN)

    @property
    def exit_code(self) -> int:
        return 1 if self.not_run else 0

    def to_dict(self) -> dict[str, Any]:
        return {"batch": self.batch_id, "results": str(self.results_path), "tasks": self.total,
                "skipped": self.skipped, "retried": self.retried, "ran": sum(self.outcomes.values()),
                "outcomes": dict(sorted(self.outcomes.items()))}


def new_group_id() -> str:
    return secrets.token_hex(4)


def run_batch(tasks_path: Path, engine: Engine, *, results_path: Path | None = None, model: str | None = None,
              settings: RunSettings = RunSettings(), progress: Callable[[str], None] = lambda _l: None,
              batch_id: str | None = None, project: Path | None = None, allow_outside_files: bool = False,
              retry_failed: bool = False) -> BatchSummary:
    """Run every task of ``tasks_path`` not yet in the results, appending each result as it comes.
    ``project``: a skills.yaml whose ``trust:`` policy every skill of the runs must pass first.
    ``retry_failed``: also run again the lines whose last result says the run did not happen
    (``failed``, ``error``, ``lost``); their new result is appended and counts from then on."""
    tasks = read_tasks(tasks_path, default_model=model, allow_outside_files=allow_outside_files)
    results = ResultsFile(results_path or default_results_path(tasks_path))
    done = results.latest(progress)
    again = {i for i, r in done.items() if r.get("outcome") in NOT_RUN} if retry_failed else set()
    todo = [t for t in tasks if t.id not in done or t.id in again]
    pinned = _trusted_skills(todo, settings.registry, project, progress)
    summary = BatchSummary(batch_id or new_group_id(), results.path, len(tasks), len(tasks) - len(todo))
    summary.retried = sum(1 for t in todo if t.id in again)
    jobs_by_id: dict[str, Task] = {t.id: t for t in todo}
    models = _model_texts(todo)
    shared = settings.for_group(summary.batch_id)
    bar = RunProgress(len(todo), progress)
    retrying = f" ({summary.retried} that did not run before)" if summary.retried else ""
    progress(f"batch {summary.batch_id}: {len(todo)} run(s) to do{retrying}, {summary.skipped} already done; engine {engine.name}, "
             f"up to {engine.jobs} at once; results -> {results.path}")

    def jobs() -> Iterator[Job]:
        for t in todo:
            yield Job(id=t.id, task=t.task, skills=tuple(pinned.get(r, r) for r in t.skills),
                      inputs=tuple(str(p) for p in t.files), **models[t.model], settings=shared)

    def on_done(result: JobResult) -> None:
        task = jobs_by_id[result.id]
        if result.outcome in UNRECORDED:
            bar.done(f"{task.id} (line {task.line}): {result.outcome}; not recorded, it runs again next time")
            return
        transcript = None
        if result.transcript is not None:
            transcript = results.transcript_path(task.id)
            save_transcript(transcript, result.transcript)
        results.append(record_for(task, result, transcript))
        summary.outcomes[result.outcome] += 1
        bar.done(describe(task.id, result))

    engine.run(jobs(), on_done)
    return summary


def _trusted_skills(tasks: list[Task], registry: str | None, project: Path | None,
                    progress: Callable[[str], None]) -> dict[str, ResolvedSkill]:
    """Under the project's trust policy: every skill the tasks name, checked and pinned (by
    reference) before any run starts; {} without a policy (the runs resolve them)."""
    from skillctl.trust.enforce import project_gate

    from .trusted import pin_trusted

    gate = project_gate(project, progress=progress) if project is not None else None
    if gate is None:
        return {}
    return pin_trusted(gate, registry, (ref for t in tasks for ref in t.skills))


def _model_texts(tasks: list[Task]) -> dict[str, dict[str, str | None]]:
    """Each distinct model spec read once (a scripted model's file travels with its jobs)."""
    found: dict[str, dict[str, str | None]] = {}
    problems = []
    for t in tasks:
        if t.model in found:
            continue
        try:
            found[t.model] = model_fields(t.model)
        except SkillctlError as exc:
            problems.append(f"line {t.line}: {exc}")
            found[t.model] = {}
    if problems:
        raise ConfigError("; ".join(problems[:MAX_REPORTED_LINES]))
    return found


def describe(name: str, result: JobResult) -> str:
    """One line about a finished run, for the progress display."""
    retried = f"; retried after {len(result.retries)} lost attempt(s)" if result.retries else ""
    if not result.started:
        return f"{name}: {result.outcome}: {result.message}{retried}"
    return f"{name}: {result.outcome} in {result.duration_s:.1f} s ({result.steps} steps, {result.Z} tokens used){retried}"
