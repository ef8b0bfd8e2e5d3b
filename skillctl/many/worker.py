"""``execute(job)``: one job on whatever runs it — a thread of this process or a Ray node.

It turns the job into a ``RunSpec`` and calls ``skillctl.runtime.run`` (the one way runs are
wired), in a scratch folder of its own: the scripted model's text and the packed inputs are
written there, the transcript and the workspace copied out land there, and everything the
caller needs comes back inside the ``JobResult`` as bytes. The run's expectations are graded
here too, while the files it produced are at hand: the judge reads them from the scratch copy.

A failure before the run starts (a skill that does not resolve, no Docker) is outcome
``failed`` with its one-line message; a bug is outcome ``error`` — one job's problem never
ends the others.
"""

from __future__ import annotations

import hashlib
import io
import socket
import tarfile
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable

from skillctl.errors import SkillctlError, StagingError
from skillctl.fsutil import tar_data_filter

from .grading import UNGRADED_OUTCOMES, Judge, grade_run, needs_judge, not_graded
from .job import ERROR, FAILED, Grading, Job, JobResult

SCRIPT_NAME = "model.script.yaml"
JUDGE_SCRIPT_NAME = "judge.script.yaml"


def execute(job: Job, *, cancel: threading.Event | None = None,
            progress: Callable[[str], None] | None = None) -> JobResult:
    """Run ``job`` and return how it ended (never raises for a run's failure)."""
    started = time.monotonic()
    node = socket.gethostname()
    if cancel is not None and cancel.is_set():
        return JobResult(job.id, "cancelled", 130, message="cancelled before it started", node=node)
    with tempfile.TemporaryDirectory(prefix="skillctl-job-") as tmp:
        scratch = Path(tmp)
        try:
            return _execute(job, scratch, cancel, progress, started, node)
        except SkillctlError as exc:
            return JobResult.not_run(job.id, FAILED, str(exc), duration_s=time.monotonic() - started, node=node)
        except Exception as exc:  # a bug: recorded for this job, the others go on
            return JobResult.not_run(job.id, ERROR, f"{type(exc).__name__}: {exc}",
                                     duration_s=time.monotonic() - started, node=node)


def _execute(job: Job, scratch: Path, cancel: threading.Event | None, progress: Callable[[str], None] | None,
             started: float, node: str) -> JobResult:
    from skillctl.runtime import RunSpec, run

    model = _model_spec(job.model, job.model_script, scratch / SCRIPT_NAME)
    inputs = [Path(p) for p in job.inputs]
    staged_digests: dict[str, str] = {}
    if job.input_archive is not None:
        inputs = _unpack_inputs(job.input_archive, scratch / "inputs")
    if job.collect_outputs:
        staged_digests = _digests(inputs)
    grading = job.grading
    shared = job.settings
    sandbox_settings = dict(shared.sandbox_settings)
    if shared.labels:
        sandbox_settings["labels"] = {**sandbox_settings.get("labels", {}), **shared.labels}
    out_dir = scratch / "outputs" if job.collect_outputs else None
    transcript = scratch / "transcript.jsonl"
    spec = RunSpec(
        task=job.task, model=model, base_url=shared.base_url, skills=list(job.skills),
        registry=shared.registry if job.skills else None, sandbox=shared.sandbox,
        allow_unsafe_local=shared.allow_unsafe_local, image=shared.image, sandbox_settings=sandbox_settings, inputs=inputs,
        output_dir=out_dir, transcript=transcript, approve=shared.approve,
        checks=list(grading.checks) if grading else [], progress=progress, cancel=cancel, **dict(shared.limits),
    )
    result = run(spec)
    if out_dir is not None:
        _drop_unchanged_inputs(out_dir, staged_digests)
    graded = None
    judge_tokens = 0
    if grading is not None:
        judge, why_not = (None, "")
        if needs_judge(grading.expectations) and result.outcome not in UNGRADED_OUTCOMES:
            judge, why_not = _open_judge(grading, scratch)
        graded = grade_run(grading, job.task, result, out_dir, judge, no_judge=why_not)
        judge_tokens = judge.tokens if judge is not None else 0
    return JobResult(
        id=job.id, outcome=result.outcome, exit_code=result.exit_code, answer=result.answer, steps=result.steps,
        Z=result.tokens_used, duration_s=time.monotonic() - started, message=result.message, run=result.to_dict(),
        transcript=transcript.read_bytes() if transcript.is_file() else None,
        outputs=_pack_outputs(out_dir) if out_dir is not None else None,
        grading=graded, judge_tokens=judge_tokens, node=node,
    )


def _model_spec(spec: str, script_text: str | None, path: Path) -> str:
    if script_text is None:
        return spec
    path.write_text(script_text, "utf-8")
    return f"script:{path}"


def _open_judge(grading: Grading, scratch: Path) -> tuple[Judge | None, str]:
    """The judge, or None and why it could not be opened (every judged expectation says so)."""
    from skillctl.models import open_model

    if grading.judge is None:
        return None, "not graded: no judge model was named"
    try:
        spec = _model_spec(grading.judge, grading.judge_script, scratch / JUDGE_SCRIPT_NAME)
        return Judge(open_model(spec, base_url=grading.base_url)), ""
    except SkillctlError as exc:
        return None, f"not graded: the judge model could not be opened: {exc}"


def not_run_grading(job: Job, result: JobResult) -> list[dict]:
    """Grades for a job whose run never happened (every expectation FAILs, saying why)."""
    if job.grading is None:
        return []
    return not_graded(job.grading, f"not graded: the run did not start ({result.outcome}: {result.message})")


# ------------------------------------------------------------------------------ files


def _unpack_inputs(archive: bytes, dest: Path) -> list[Path]:
    """The inputs a job carried, back as files; the archive's top-level names are the inputs."""
    dest.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:") as tar:
        members = tar.getmembers()
        for m in members:
            if m.name.startswith("/") or ".." in m.name.split("/") or not (m.isfile() or m.isdir()):
                raise StagingError(f"the job's input archive holds an unsafe member {m.name!r}")
        tar.extractall(dest, **tar_data_filter())
    return sorted(dest / name for name in {m.name.split("/")[0] for m in members})


def _digests(inputs: list[Path]) -> dict[str, str]:
    """sha256 of every staged file, by its path in the workspace (inputs go under their names)."""
    found: dict[str, str] = {}
    for top in inputs:
        files = [top] if top.is_file() else sorted(p for p in top.rglob("*") if p.is_file())
        for f in files:
            rel = top.name if f == top else f"{top.name}/{f.relative_to(top).as_posix()}"
            found[rel] = hashlib.sha256(f.read_bytes()).hexdigest()
    return found


def _drop_unchanged_inputs(out_dir: Path, staged: dict[str, str]) -> None:
    """``outputs/`` holds what the run produced: staged inputs it left as they were are removed."""
    for rel, digest in staged.items():
        path = out_dir / rel
        if path.is_file() and hashlib.sha256(path.read_bytes()).hexdigest() == digest:
            path.unlink()
    for folder in sorted((p for p in out_dir.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True):
        if not any(folder.iterdir()):
            folder.rmdir()


def _pack_outputs(out_dir: Path) -> bytes:
    from skillctl.runtime.staging import inputs_tar

    out_dir.mkdir(parents=True, exist_ok=True)  # a run that produced nothing still has an outputs/
    return inputs_tar([out_dir])
