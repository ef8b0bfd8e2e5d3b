"""``skillctl eval``: run a skill's test cases with and without it (or with its previous
version), grade every run, and lay the results out as the Agent Skills guide does::

    <skill>-workspace/iteration-N/
        eval-<id>/eval_metadata.json                     the case (id, prompt, expectations…)
        eval-<id>/with_skill/{outputs/, timing.json, grading.json, transcript.jsonl, run.json}
        eval-<id>/without_skill/…   (or old_skill/ with --baseline VERSION|DIR)
        benchmark.json, report.html

With ``runs_per_case`` K > 1 each configuration holds ``run-1/`` … ``run-K/`` (the layout of
Anthropic's skill-creator). Every run is its own job — its own container, a clean context —
and the case's files are staged into its workspace.

Where the skills come from: a skill folder (the one evaluated, or ``--baseline DIR``) is packed
and published into a folder registry of its own inside the iteration (``.registries/<config>``),
so runs load it exactly as they load any published skill; on a Ray cluster that folder must be
on storage every node mounts (or publish the skill and evaluate it by reference). A reference
(``NAME@VERSION``) and ``--baseline VERSION`` come from the run's registry.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator

from skillctl.errors import ConfigError, SkillctlError
from skillctl.protocols import ResolvedSkill

from .batch import describe, new_group_id, save_transcript
from .benchmark import OLD_SKILL, WITH_SKILL, WITHOUT_SKILL, RunRecord, benchmark
from .engines import Engine
from .evalfile import EvalCase, EvalSet, load_evals
from .grading import summary
from .job import Grading, Job, JobResult, RunSettings, judge_fields, model_fields
from .progress import RunProgress
from .worker import not_run_grading

if TYPE_CHECKING:
    from skillctl.trust.enforce import Gate

BASELINE_NONE = "none"


@dataclass(frozen=True)
class EvalOptions:
    model: str
    judge: str | None = None  # default: the run's model
    judge_base_url: str | None = None  # default: the runs' endpoint
    baseline: str = BASELINE_NONE  # none | VERSION | DIR
    runs_per_case: int = 1
    workspace: Path | None = None  # the <skill>-workspace folder
    settings: RunSettings = field(default_factory=RunSettings)
    project: Path | None = None  # a skills.yaml whose trust: policy every loaded skill must pass
    allow_local_skills: bool = False  # under that policy, load skill folders although they are unsigned

    def __post_init__(self) -> None:
        if self.runs_per_case < 1:
            raise ConfigError(f"runs per case must be at least 1, got {self.runs_per_case}")


@dataclass(frozen=True)
class Variant:
    """One configuration of the eval: which skill it loads (none for ``without_skill``)."""

    config: str
    skills: tuple[str | ResolvedSkill, ...]  # exact versions once a trust policy passed them
    registry: str | None
    label: str  # for people: "tally@1.2.0 (skills/tally)", "no skill"
    folder: str | None = None  # the skill folder it was packed from, as given (it has no signature)


@dataclass
class EvalReport:
    skill_name: str
    iteration: Path
    configs: tuple[str, str]
    benchmark: dict[str, Any]
    records: list[RunRecord]
    variants: tuple[Variant, Variant]
    case_names: tuple[str, ...]

    @property
    def not_run(self) -> int:
        return sum(1 for r in self.records if not r.started)

    @property
    def exit_code(self) -> int:
        return 1 if self.not_run else 0

    def to_dict(self) -> dict[str, Any]:
        return {"skill_name": self.skill_name, "iteration": str(self.iteration),
                "benchmark": str(self.iteration / "benchmark.json"), "report": str(self.iteration / "report.html"),
                "run_summary": self.benchmark["run_summary"], "notes": self.benchmark["notes"],
                "runs": self.benchmark["runs"]}


# ------------------------------------------------------------------------------ the subject


@dataclass(frozen=True)
class Subject:
    name: str
    version: str
    folder: Path  # the skill's files on this machine: evals/evals.json and the case files
    from_folder: bool
    source: str


def _scratch_version(folder: Path) -> str | None:
    """A folder skill without ``metadata.version`` is still evaluable: it is packed as 0.0.0."""
    from skillctl.skill import load_skill

    return None if load_skill(folder).version else "0.0.0"


def resolve_subject(target: str, registry_url: str | None, scratch: Path) -> Subject:
    """The skill named by ``target``: a folder, or a reference in the registry (unpacked into
    ``scratch`` so its evals and files can be read)."""
    folder = Path(target)
    if folder.is_dir():
        from skillctl.skill import load_skill

        skill = load_skill(folder)
        return Subject(skill.name, skill.version or "0.0.0", folder.resolve(), True, str(folder))
    if "/" in target or target.startswith("."):
        raise ConfigError(f"{target} is not a skill folder (no such directory); give a folder or a reference NAME[@VERSION]")
    from skillctl.bundle import read_bundle, write_contents
    from skillctl.registry import open_registry

    with open_registry(registry_url, create=False) as reg:
        resolved = reg.resolve(target)
        contents = read_bundle(reg.fetch(resolved), expected_name=resolved.name, source=f"{resolved.name}@{resolved.version}")
    unpacked = write_contents(contents, scratch, durable=False)
    return Subject(resolved.name, resolved.version, unpacked, False, f"{resolved.name}@{resolved.version}")


def _publish_folder(folder: Path, registry_dir: Path) -> str:
    """Pack ``folder`` into a fresh folder registry; return the exact reference to load."""
    from skillctl.registry.local import LocalRegistry
    from skillctl.registry.prepare import prepare_folder

    with tempfile.TemporaryDirectory(prefix="skillctl-eval-") as tmp:
        # A snapshot such as <workspace>/skill-snapshot/ (the guide's name) is not named after
        # its skill; the spec requires that of a skill folder, so it is packed from a copy that is.
        named = _named_copy(folder, Path(tmp))
        bundle = prepare_folder(named, version=_scratch_version(named))
        with LocalRegistry(registry_dir) as reg:
            reg.publish(bundle)
    return f"{bundle.name}@{bundle.version}"


def _named_copy(folder: Path, tmp: Path) -> Path:
    from skillctl.skill.document import parse_skill_md

    md = folder / "SKILL.md"
    if not md.is_file():
        raise ConfigError(f"{folder} holds no SKILL.md; --baseline DIR must be a skill folder")
    doc, _ = parse_skill_md(md.read_bytes(), str(md))
    name = doc.metadata.get("name") if doc is not None else None
    if not isinstance(name, str) or not name.strip() or "/" in name or name in (".", ".."):
        return folder  # let validation report what is wrong, against the real folder
    target = tmp / name
    shutil.copytree(folder, target, symlinks=True)
    return target


def resolve_baseline(baseline: str, subject: Subject, iteration: Path, registry_url: str | None) -> Variant:
    if baseline == BASELINE_NONE:
        return Variant(WITHOUT_SKILL, (), None, "no skill")
    folder = Path(baseline)
    if folder.is_dir():
        ref = _publish_folder(folder.resolve(), iteration / ".registries" / OLD_SKILL)
        return Variant(OLD_SKILL, (ref,), str(iteration / ".registries" / OLD_SKILL), f"{ref} ({baseline})", baseline)
    from skillctl.errors import VersionError
    from skillctl.registry import open_registry
    from skillctl.versioning import SemVer

    try:
        SemVer.parse(baseline)
    except VersionError:
        raise ConfigError(f"--baseline {baseline!r} is neither 'none', a version of {subject.name} nor a skill folder") from None
    with open_registry(registry_url, create=False) as reg:
        resolved = reg.resolve(f"{subject.name}@{baseline}")
    ref = f"{resolved.name}@{resolved.version}"
    return Variant(OLD_SKILL, (ref,), registry_url, f"{ref} (registry)")


def subject_variant(subject: Subject, iteration: Path, registry_url: str | None) -> Variant:
    if subject.from_folder:
        where = iteration / ".registries" / WITH_SKILL
        ref = _publish_folder(subject.folder, where)
        return Variant(WITH_SKILL, (ref,), str(where), f"{ref} ({subject.source})", subject.source)
    ref = f"{subject.name}@{subject.version}"
    return Variant(WITH_SKILL, (ref,), registry_url, f"{ref} (registry)")


def trusted_variant(variant: Variant, gate: Gate | None, options: EvalOptions) -> Variant:
    """``variant`` with its skills checked by the project's trust policy and pinned to the
    versions that passed; as it is without a policy. A folder is refused under a policy that
    requires signatures, unless ``options.allow_local_skills``."""
    if gate is None or not variant.skills:
        return variant
    from skillctl.trust.enforce import folder_gate

    from .trusted import pin_trusted

    if variant.folder is not None:
        gate = folder_gate(gate, variant.folder, where=str(options.project), allowed=options.allow_local_skills)
    pinned = pin_trusted(gate, variant.registry, [r for r in variant.skills if isinstance(r, str)])
    return replace(variant, skills=tuple(pinned[r] if isinstance(r, str) else r for r in variant.skills))


# ------------------------------------------------------------------------------ the workspace


def default_workspace(subject: Subject) -> Path:
    """Beside the skill folder, as the guide lays it out; for a reference, in this folder."""
    base = subject.folder.parent if subject.from_folder else Path.cwd()
    return base / f"{subject.name}-workspace"


def new_iteration(workspace: Path) -> Path:
    """The next ``iteration-N`` (created here, so two evals at once never share one)."""
    workspace.mkdir(parents=True, exist_ok=True)
    taken = [int(p.name.split("-", 1)[1]) for p in workspace.glob("iteration-*") if p.name.split("-", 1)[1].isdigit()]
    n = max(taken, default=0) + 1
    while True:
        path = workspace / f"iteration-{n}"
        try:
            path.mkdir()
            return path
        except FileExistsError:
            n += 1


def run_folder(iteration: Path, case: EvalCase, config: str, run_number: int, runs_per_case: int) -> Path:
    base = iteration / case.name / config
    return base if runs_per_case == 1 else base / f"run-{run_number}"


def task_text(case: EvalCase) -> str:
    """The prompt, and — as the guide's run instructions do — which input files the run has."""
    if not case.files:
        return case.prompt
    names = ", ".join(Path(f).name for f in case.files)
    return f"{case.prompt}\n\nInput files (in your working folder): {names}"


def write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", "utf-8")


def write_run(folder: Path, job: Job, result: JobResult) -> list[dict[str, Any]]:
    """The run's files in its folder; returns its graded expectations."""
    from skillctl.runtime.staging import extract_outputs

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "outputs").mkdir(exist_ok=True)
    if result.outputs is not None:
        extract_outputs(result.outputs, folder / "outputs")
    if result.transcript is not None:
        save_transcript(folder / "transcript.jsonl", result.transcript)
    expectations = result.grading if result.grading is not None else not_run_grading(job, result)
    write_json(folder / "grading.json", {"expectations": expectations, "summary": summary(expectations)})
    duration_ms = round(result.duration_s * 1000)
    write_json(folder / "timing.json", {"total_tokens": result.Z, "duration_ms": duration_ms,
                                        "total_duration_seconds": round(result.duration_s, 3)})
    write_json(folder / "run.json", {
        "outcome": result.outcome, "exit_code": result.exit_code, "answer": result.answer, "steps": result.steps,
        "tokens_used": result.Z, "Z": result.Z, "duration_s": round(result.duration_s, 3), "message": result.message,
        "judge_tokens": result.judge_tokens, "node": result.node, "attempts": result.attempts,
        "retries": result.retries, "run": result.run,
    })
    return expectations


# ------------------------------------------------------------------------------ the eval


def run_eval(target: str, engine: Engine, options: EvalOptions,
             progress: Callable[[str], None] = lambda _l: None) -> EvalReport:
    """Run every case of ``target``'s evals in both configurations and write the iteration."""
    from .report import write_report

    registry_url = options.settings.registry
    with ExitStack() as stack:
        scratch = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="skillctl-eval-")))
        subject = resolve_subject(target, registry_url, scratch)
        evals = load_evals(subject.folder, subject.name)
        model = model_fields(options.model)
        judge = judge_fields(options.judge or options.model)
        workspace = options.workspace or default_workspace(subject)
        fresh = not workspace.exists()
        iteration = new_iteration(workspace)
        try:
            from skillctl.trust.enforce import project_gate

            gate = project_gate(options.project, progress=progress) if options.project is not None else None
            primary = trusted_variant(subject_variant(subject, iteration, registry_url), gate, options)
            baseline = trusted_variant(resolve_baseline(options.baseline, subject, iteration, registry_url), gate, options)
        except BaseException:
            # Nothing ran: leave no empty iteration (or workspace) behind.
            shutil.rmtree(iteration, ignore_errors=True)
            if fresh:
                shutil.rmtree(workspace, ignore_errors=True)
            raise
        variants = (primary, baseline)
        configs = (primary.config, baseline.config)
        group = new_group_id()
        for case in evals.cases:
            write_json(iteration / case.name / "eval_metadata.json", case.to_dict())
        planned = list(_plan(evals, subject, variants, options, model, judge, group))
        by_id = {job.id: (case, config, n, job) for case, config, n, job in planned}
        records: list[RunRecord] = []
        bar = RunProgress(len(planned), progress)
        progress(f"eval {subject.name}: {len(evals.cases)} case(s) × {configs[0]} vs {configs[1]} × "
                 f"{options.runs_per_case} run(s) = {len(planned)} runs; engine {engine.name}, up to {engine.jobs} at once; "
                 f"-> {iteration}")
        progress(f"  {configs[0]}: {primary.label}; {configs[1]}: {baseline.label}")
        started = time.time()

        def on_done(result: JobResult) -> None:
            case, config, n, job = by_id[result.id]
            folder = run_folder(iteration, case, config, n, options.runs_per_case)
            expectations = write_run(folder, job, result)
            records.append(_record(case, config, n, result, expectations, folder.relative_to(iteration)))
            passed = sum(1 for e in expectations if e["passed"])
            bar.done(f"{describe(f'{case.name} {config}' + (f' run {n}' if options.runs_per_case > 1 else ''), result)}; "
                     f"{passed}/{len(expectations)} expectations passed")

        engine.run((job for *_, job in planned), on_done)
        metadata = {
            "skill_name": subject.name, "skill_path": subject.source, "skill_version": subject.version,
            "configurations": {v.config: v.label for v in variants}, "executor_model": options.model,
            "judge_model": options.judge or options.model, "engine": engine.name,
            "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
            "evals_run": [c.id for c in evals.cases], "runs_per_configuration": options.runs_per_case,
        }
        bench = benchmark(records, configs, metadata, [c.name for c in evals.cases])
        write_json(iteration / "benchmark.json", bench)
        report = EvalReport(subject.name, iteration, configs, bench, records, variants,
                            tuple(c.name for c in evals.cases))
        write_report(report, evals)
        return report


def _plan(evals: EvalSet, subject: Subject, variants: tuple[Variant, Variant], options: EvalOptions,
          model: dict[str, str | None], judge: dict[str, str | None], group: str) -> Iterator[tuple[EvalCase, str, int, Job]]:
    """Every run, case by case, the configurations of a case side by side."""
    shared = options.settings.for_group(group)
    for case in evals.cases:
        grading = Grading(case.graded, base_url=options.judge_base_url or shared.base_url, expected_output=case.expected_output, **judge)
        inputs = tuple(str(subject.folder / f) for f in case.files)
        for n in range(1, options.runs_per_case + 1):
            for v in variants:
                job = Job(id=f"{case.name}/{v.config}/run-{n}", task=task_text(case), **model, skills=v.skills,
                          settings=replace(shared, registry=v.registry), inputs=inputs, grading=grading,
                          collect_outputs=True)
                yield case, v.config, n, job


def _record(case: EvalCase, config: str, n: int, result: JobResult, expectations: list[dict[str, Any]],
            folder: Path) -> RunRecord:
    label = f"{case.name}/{config} run {n}"
    notes = [f"{label}: {note}; it ran again on another node" for note in result.retries]
    if not result.started:
        notes.append(f"{label} did not run ({result.outcome}): {result.message}")
    return RunRecord(case.id, case.name, config, n, result.outcome, expectations, result.duration_s, result.Z,
                     started=result.started, message=result.message, path=folder.as_posix(), notes=notes)

