"""One run of many, as plain data: the ``Job`` that goes to a worker and the ``JobResult`` that
comes back.

Both are made of strings, numbers, bytes and tuples, so they pickle and cross to a Ray node
unchanged: nothing else travels. A job carries what a node cannot find on its own — the text
of a scripted model, the packed input files — and names the rest: skills by reference in a
registry every node reaches (a shared folder or ``oci://``) — or, once a project's trust policy
passed them, as the exact ``ResolvedSkill`` (plain strings: name, version, digest) —, images by
name (each node runs its own Docker Engine). A result carries the transcript and the files the run produced as bytes,
because they were written on the node.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Mapping

from skillctl.errors import ConfigError
from skillctl.protocols import ResolvedSkill

# The limits a job may set, with RunSpec's field names.
LIMIT_FIELDS = ("max_steps", "max_seconds", "max_tokens", "context_budget", "timeout_ms")

# Outcomes a job has beyond the run's own (skillctl.runtime.stops): the run could not start
# (a skill that does not resolve, no Docker…), a bug escaped, or every attempt lost its node.
FAILED = "failed"
ERROR = "error"
LOST = "lost"
NOT_RUN_EXIT_CODE = 1


@dataclass(frozen=True)
class Expectation:
    """What a graded run should show: ``text`` for people (and the judge), and optionally a
    shell ``check`` run in the run's container after the agent finished (exit 0 = PASS)."""

    text: str
    check: str | None = None

    def to_json(self) -> str | dict[str, str]:
        return self.text if self.check is None else {"text": self.text, "check": self.check}


@dataclass(frozen=True)
class Grading:
    """How to grade a job: its expectations, and the judge model for those without a check
    (a spec; ``judge_script`` holds a scripted judge's text so it travels with the job)."""

    expectations: tuple[Expectation, ...]
    judge: str | None = None
    judge_script: str | None = None
    base_url: str | None = None
    expected_output: str = ""

    @property
    def checks(self) -> tuple[str, ...]:
        return tuple(e.check for e in self.expectations if e.check is not None)


# Every container of one batch or eval carries this label (find them with `docker ps --filter`).
LABEL_BATCH = "org.skillctl.batch"


@dataclass(frozen=True)
class RunSettings:
    """What the runs of a batch or an eval share: the registry skills come from (one every node
    reaches), the model endpoint, limits (``RunSpec``'s names), approval, the sandbox, and the
    labels every container gets."""

    registry: str | None = None
    base_url: str | None = None
    limits: Mapping[str, Any] = field(default_factory=dict)
    approve: str = "never"
    sandbox: str = "docker"
    allow_unsafe_local: bool = False
    image: str | None = None
    sandbox_settings: Mapping[str, Any] = field(default_factory=dict)
    labels: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        unknown = sorted(set(self.limits) - set(LIMIT_FIELDS))
        if unknown:
            raise ConfigError(f"unknown limit(s) {', '.join(unknown)}; valid: {', '.join(LIMIT_FIELDS)}")

    def for_group(self, group: str) -> "RunSettings":
        """These settings with ``group`` labelling the containers (labels exist for docker only)."""
        if self.sandbox != "docker":
            return self
        return replace(self, labels={**self.labels, LABEL_BATCH: group})


@dataclass(frozen=True)
class Job:
    """One run. ``id`` names it in reports (unique within a batch or an eval).

    ``model`` is a model spec; for ``script:FILE`` the file's text is in ``model_script`` (see
    ``model_fields``). ``inputs`` are paths on the machine that made the job; ``packed()`` turns
    them into ``input_archive`` bytes for a job that leaves it.
    """

    id: str
    task: str
    model: str
    model_script: str | None = None
    skills: tuple[str | ResolvedSkill, ...] = ()
    inputs: tuple[str, ...] = ()
    input_archive: bytes | None = None
    settings: RunSettings = field(default_factory=RunSettings)
    grading: Grading | None = None
    collect_outputs: bool = False

    def packed(self) -> "Job":
        """The job with its input files inside it (for a node that cannot read this machine's files)."""
        if not self.inputs:
            return self
        from skillctl.runtime.staging import inputs_tar

        return replace(self, inputs=(), input_archive=inputs_tar([Path(p) for p in self.inputs]))


def model_fields(spec: str) -> dict[str, str | None]:
    """``Job`` fields for a model spec: a scripted model's file is read here, once, so the job
    carries it wherever it runs (its errors are reported before any run starts)."""
    if spec.startswith("script:"):
        from skillctl.models.script import load_script

        path = Path(spec.partition(":")[2])
        load_script(path)  # a broken script fails now, in one line, not once per run
        return {"model": f"script:{path.name}", "model_script": path.read_text("utf-8")}
    return {"model": spec, "model_script": None}


def judge_fields(spec: str) -> dict[str, str | None]:
    fields = model_fields(spec)
    return {"judge": fields["model"], "judge_script": fields["model_script"]}


@dataclass
class JobResult:
    """How a job ended. ``outcome`` is the run's (``answered``, ``budget_exhausted``…) or one of
    ``failed`` (the run could not start: ``message`` says why), ``error`` (a bug) and ``lost``
    (every attempt lost its node). ``run`` is ``RunResult.to_dict()``; ``transcript`` and
    ``outputs`` (a tar, top folder ``outputs/``) are bytes from wherever it ran; ``grading`` the
    graded expectations (``text``, ``passed``, ``evidence``). ``attempts`` and ``retries`` say
    whether it had to be run again elsewhere, and why."""

    id: str
    outcome: str
    exit_code: int
    answer: str | None = None
    steps: int = 0
    Z: int = 0
    duration_s: float = 0.0
    message: str = ""
    run: dict[str, Any] | None = None
    transcript: bytes | None = None
    outputs: bytes | None = None
    grading: list[dict[str, Any]] | None = None
    judge_tokens: int = 0
    node: str = ""
    attempts: int = 1
    retries: list[str] = field(default_factory=list)

    @property
    def started(self) -> bool:
        """Whether the run itself happened (its numbers mean something)."""
        return self.outcome not in (FAILED, ERROR, LOST)

    @classmethod
    def not_run(cls, job_id: str, outcome: str, message: str, *, duration_s: float = 0.0, node: str = "") -> "JobResult":
        return cls(job_id, outcome, NOT_RUN_EXIT_CODE, message=message, duration_s=duration_s, node=node)


def line_id(obj: Mapping[str, Any]) -> str:
    """A stable id for a task without one: a hash of its content (key order does not matter)."""
    canonical = json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return "h" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:12]
