"""``run(spec)``: one agent run as a library call — everything ``skillctl run`` does, no click.

``Runner`` is the run as small steps a subclass may replace::

    run()
      open_model, make_approver               a bad model spec or policy fails first
      make_egress()                           the network policy's session, secrets read now
                                              (None without a network)
      registry() -> resolve_skills()          the skills' metadata only, before any container;
                                              with a lock, a store of its skills from their
                                              sources (``skillctl.project.runs``); the project's
                                              trust policy on every skill: the lock's or
                                              skills.yaml's (project_gate)
      fetch_bundles(skills, registry)         every bundle fetched once and verified; the
                                              environment and the loader both read these
      memory_session()                        hold the long-term memory (one run at a time)
      select_image(skills, registry)          which image: the backend's base image with the
                                              environment the skills declare layered on it
                                              (None: the backend runs no image)
      sandbox_session(image)                  the sandbox, created with sandbox_options(image):
                                              set-up and tear-down around it live here: the
                                              egress network, firewall, proxy and CA first
        prepare(sandbox, ...)                 stage inputs and memory, copy the skills in
                                              -> c₁'s system text
        make_agent(...).run(system, task)     the loop (``skillctl.runtime.loop``)
        finish(sandbox, result)               checks, after_run, memory, outputs — before the
                                              teardown
      end_transcript()                        run_end with the whole result, skills and memory
                                              included, whatever happened after the loop

Failures before the loop starts (a skill that does not resolve, a tampered bundle, a bad input,
no Docker) raise ``SkillctlError``; once the loop runs, every ending is a ``RunResult`` whose
outcome and exit code come from ``skillctl.runtime.stops``.

Several runs may go at once on worker threads of one process: a run keeps its state in its
``Runner``, reports through ``spec.progress``, writes its own transcript file, and registers no
signal handler off the main thread (``skillctl.sandbox.cleanup``); ``spec.cancel`` stops it.
"""

from __future__ import annotations

import secrets
import time
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

from skillctl.bundle import BundleContents
from skillctl.errors import ConfigError, SandboxError, SkillctlError
from skillctl.protocols import ExecResult, Model, RegistryReader, ResolvedSkill, Sandbox
from skillctl.runtime.approval import ApprovalPolicy, Approver
from skillctl.runtime.deadline import Deadline
from skillctl.runtime.loader import fetch_bundles, load_skills, resolve_all
from skillctl.runtime.loop import Agent
from skillctl.runtime.memory import MEMORY_DIR, Memory
from skillctl.runtime.prompt import memory_section, system_prompt
from skillctl.runtime.result import CheckResult, RunResult
from skillctl.runtime.spec import RunSpec
from skillctl.runtime.staging import extract_outputs, inputs_tar
from skillctl.runtime.stops import Cancelled, Interrupted, SandboxFailed
from skillctl.runtime.tools import ToolBox, shell_tool
from skillctl.runtime.transcript import Transcript

if TYPE_CHECKING:
    from skillctl.egress.session import EgressSession
    from skillctl.project.runs import LockedRun
    from skillctl.trust.enforce import Gate


def run(spec: RunSpec) -> RunResult:
    """Run an agent as ``spec`` says and return how it ended (see the module docstring)."""
    return Runner(spec).run()


def default_transcript_path() -> Path:
    """A new file under the user state folder; unique even for runs started in the same second."""
    from skillctl.runtime.runs import runs_home

    stamp = time.strftime("%Y%m%d-%H%M%S")
    return runs_home() / f"run-{stamp}-{secrets.token_hex(3)}.jsonl"


class Runner:
    """One run of ``spec``, as the steps in the module docstring. A Runner holds the state of
    its run (the memory it holds, the transcript it writes): make one per run."""

    def __init__(self, spec: RunSpec) -> None:
        self.spec = spec
        self.progress = spec.progress or (lambda _line: None)
        self.transcript_path = spec.transcript or default_transcript_path()
        self.memory: Memory | None = None  # held by memory_session for the run
        self.bundles: dict[str, BundleContents] = {}  # the skills' verified contents, by digest
        self.isolated: tuple[str, ...] = ()  # skills whose scripts run with a venv of their own
        self.memory_tar = b""
        self.egress: EgressSession | None = None  # made by make_egress, live in sandbox_session
        self.transcript: Transcript | None = None  # the agent's, once make_agent made it
        self.agent: Agent | None = None  # made by make_agent; its run_end is written by end_transcript
        self.skills: list[ResolvedSkill] = []  # resolved by resolve_skills
        self.locked: LockedRun | None = None  # a lock's skills and policy, while registry() is open

    def run(self) -> RunResult:
        try:
            return self.run_steps()
        finally:
            self.end_transcript()

    def run_steps(self) -> RunResult:
        spec = self.spec
        started = time.monotonic()
        model = self.open_model()
        approver = self.make_approver()
        self.egress = self.make_egress()
        with self.registry() as registry:
            skills = self.resolve_skills(registry)
            self.skills = skills
            self.bundles = self.fetch_bundles(skills, registry)
            # Packed before the container starts, so a bad input fails in one line without one.
            staged = inputs_tar(list(spec.inputs)) if spec.inputs else None
            with self.memory_session():  # before the image: a busy memory fails fast
                image = self.select_image(skills, registry)
                finished: RunResult | None = None
                try:
                    with self.sandbox_session(image) as sandbox:
                        system_text = self.prepare(sandbox, registry, skills, staged)
                        result = self.make_agent(model, approver, sandbox, system_text).run(system_text, spec.task)
                        self.finish(sandbox, result)
                        finished = result
                except SandboxError as exc:
                    if finished is None:
                        raise
                    # Only removing the sandbox failed: the run and its answer stand (the reaper
                    # removes the container once its owner is gone or its TTL has passed).
                    finished.warnings.append(f"the sandbox was not removed: {exc}")
        result.duration_s = time.monotonic() - started
        self.describe_loaded(result)
        if self.egress is not None:  # stopped by now: its counts are final
            # With the policy it enforced and where it came from: a project file may have chosen it.
            result.egress = {**self.egress.summary.to_dict(), "policy": self.egress.policy.report()}
            result.warnings += self.egress.problems
        return result

    def describe_loaded(self, result: RunResult) -> None:
        """What the run loaded, on its result: the skills and the long-term memory."""
        result.skills = [{"name": s.name, "version": s.version, "digest": s.digest} for s in self.skills]
        result.memory = str(self.memory.folder) if self.memory is not None else None

    def end_transcript(self) -> None:
        """``run_end`` once everything is known — what the run loaded, the checks, outputs and
        egress counts after the loop — rather than as the loop ends; written whatever happened
        after the loop (an error there still leaves a transcript that says how the loop ended)."""
        agent = self.agent
        if agent is None or agent.result is None:
            return
        self.describe_loaded(agent.result)
        agent.end_run(agent.result)

    # ------------------------------------------------------------------ before the sandbox

    def open_model(self) -> Model:
        if isinstance(self.spec.model, str):
            from skillctl.models import open_model

            return open_model(self.spec.model, base_url=self.spec.base_url)
        return self.spec.model

    def make_approver(self) -> Approver:
        policy = self.spec.policy
        if policy is None:
            policy = ApprovalPolicy.default()
        elif not isinstance(policy, ApprovalPolicy):
            policy = ApprovalPolicy.load(policy)
        return Approver(policy, mode=self.spec.approve)  # type: ignore[arg-type]  # RunSpec checked the mode

    def make_egress(self) -> EgressSession | None:
        """The run's network egress, not started yet: every secret value is read now, so a
        missing one fails before anything is built. None when the policy allows no domain."""
        policy = self.spec.network_policy
        if policy is None and (self.spec.lock is not None or self.spec.project is not None):
            # The project's own network: section, as `skillctl run` applies it (secrets only
            # with project_secrets).
            from skillctl.project.runs import project_network

            policy = project_network(self.spec.lock, self.spec.project, allow_secrets=self.spec.project_secrets)
            if policy is not None and policy.enabled and self.spec.sandbox != "docker":
                raise ConfigError(f"{policy.origin} allows network domains, which needs the docker sandbox; "
                                  "pass network={'type': 'disabled'} to run without it")
        if policy is None or not policy.enabled:
            return None
        from skillctl.egress.session import EgressSession

        return EgressSession(policy, resolve=self.spec.egress_resolve, extra_ca=self.spec.egress_ca,
                             log_path=self.spec.egress_log, on_record=self.report_egress)

    @contextmanager
    def registry(self) -> Iterator[RegistryReader | None]:
        """Where skills load from: None without skills; with a lock, a store of its skills (from
        their sources, checked against the lock and its trust policy; skills named beside it go
        to ``spec.registry``); else the registry the caller opened (the caller closes it), or the
        one ``spec.registry`` names, opened and closed here."""
        spec = self.spec
        if spec.lock is not None:
            from skillctl.project.runs import locked_run

            with locked_run(spec.lock, registry=spec.registry, progress=self.progress) as locked:
                self.locked = locked
                yield locked.store  # type: ignore[misc]  # a Store that also serves signatures
            return
        if not spec.skills:
            yield None
        elif spec.registry is not None and not isinstance(spec.registry, str):
            yield spec.registry
        else:
            from skillctl.registry import open_registry

            with open_registry(spec.registry) as registry:
                yield registry

    def resolve_skills(self, registry: RegistryReader | None) -> list[ResolvedSkill]:
        """Every requested skill's metadata, sorted by name; a lock's digests are enforced, and
        the project's trust policy applies to every skill, locked or named (``spec.skills``)."""
        if registry is None:
            return []
        named = resolve_all(registry, list(self.spec.skills))
        locked: list[ResolvedSkill] = []
        if self.locked is not None:
            locked, gate = self.locked.skills(), self.locked.gate
        else:
            gate = self.project_gate()
        if gate is not None:
            # A skill named beside the lock is held to the lock's policy too: naming it on the
            # command line is no way around the project's keys and audit.
            pinned = {(s.name, s.version, s.digest) for s in locked}
            gate.check_all(registry, [s for s in named if (s.name, s.version, s.digest) not in pinned])
        return resolve_all(registry, [*named, *locked])

    def project_gate(self) -> Gate | None:
        """For a run without a lock: the trust policy of ``spec.project`` (its skills.yaml) as it
        is now; None without a project or a ``trust:`` section."""
        if self.spec.project is None:
            return None
        from skillctl.trust.enforce import project_gate

        return project_gate(self.spec.project, progress=self.progress)

    def fetch_bundles(self, skills: list[ResolvedSkill], registry: RegistryReader | None) -> dict[str, BundleContents]:
        """Every skill's bundle, fetched once and verified (digest, then as a hostile archive)
        before any container starts; the environment and the loader both read these."""
        return fetch_bundles(registry, skills) if registry is not None else {}

    def select_image(self, skills: list[ResolvedSkill], registry: RegistryReader | None) -> str | None:
        """Which image the sandbox runs: the backend's base image (``spec.image``, else its
        default, built if missing) with the environment the skills — or the lock — declare
        layered on it (built on first use, cached after). None when the backend runs no image.
        The one place that decides it."""
        from skillctl.sandbox import base_image

        base = base_image(self.spec.sandbox, self.spec.image, progress=self.progress)
        if base is None:
            return None
        from skillctl.env.prepare import run_environment

        lock_environment = self.locked.lock.environment if self.locked is not None else None
        project_environment = None
        ignored = tuple(self.spec.ignore_requires_python)
        if self.locked is not None:
            ignored += self.locked.lock.ignore_requires_python
        elif self.spec.project is not None and self.spec.project.is_file():
            # A run in a project without a lock still gets the packages skills.yaml declares.
            from skillctl.env.declare import ignored_requires_python
            from skillctl.project.spec import load_project

            project_environment = load_project(self.spec.project).environment
            ignored += ignored_requires_python(project_environment, str(self.spec.project))
        from skillctl.env.resolve import indexes

        chosen = run_environment(skills, registry, base, lock_path=self.spec.lock, lock_environment=lock_environment,
                                 project_environment=project_environment,
                                 index=indexes(self.spec.index_url, self.spec.extra_index_urls) if self.spec.extra_index_urls
                                 else self.spec.index_url,
                                 allow_sdist=self.spec.allow_sdist, bundles=self.bundles, ignore_requires_python=ignored,
                                 progress=self.progress, isolate=tuple(self.spec.isolate_env))
        self.isolated = chosen.isolated
        return chosen.image

    @contextmanager
    def memory_session(self) -> Iterator[Memory | None]:
        """Hold the run's long-term memory (``MemoryInUseError`` when another run has it) and
        pack it, both before any container starts; released when the run is over."""
        if self.spec.memory is None:
            yield None
            return
        with Memory.locate(self.spec.memory).locked() as memory:
            self.memory, self.memory_tar = memory, memory.archive()
            yield memory

    # ------------------------------------------------------------------ the sandbox

    def sandbox_options(self, image: str | None) -> dict[str, Any]:
        """Everything the sandbox is created with, in one place: the image, the backend's
        settings, and what the run adds to them (the memory's folder; the egress network, its
        DNS and the proxy/CA/placeholder environment)."""
        options = {
            "image": image,
            "allow_unsafe_local": self.spec.allow_unsafe_local,
            "progress": self.progress,
            **self.spec.sandbox_settings,
        }
        if self.memory is not None:
            options["extra_dirs"] = (*options.get("extra_dirs", ()), MEMORY_DIR)
        if self.egress is not None:
            egress = self.egress.sandbox_settings()
            options.update(egress, env={**dict(options.get("env", {})), **egress["env"]})
        return options

    @contextmanager
    def sandbox_session(self, image: str | None) -> Iterator[Sandbox]:
        """The started sandbox for the run; removed on the way out, whatever happened. Set-up
        that must exist before the sandbox starts, and its tear-down after, wraps this."""
        from skillctl.sandbox import open_sandbox

        with self.egress or nullcontext():
            if self.egress is not None:
                self.progress(f"egress proxy for {self.egress.policy.describe()}")
            sandbox = open_sandbox(self.spec.sandbox, **self.sandbox_options(image))
            with sandbox:
                if self.egress is not None:
                    self.egress.attach(sandbox)  # its CA, before any command runs
                yield sandbox

    def prepare(self, sandbox: Sandbox, registry: RegistryReader | None, skills: list[ResolvedSkill],
                staged: bytes | None) -> str:
        """Stage the inputs and load the skills into ``sandbox``; return c₁'s system text."""
        self.progress(f"sandbox started ({self.spec.sandbox})")
        if staged is not None:
            # Owned by the agent's user: staged as root, inputs were read-only to the agent and it
            # could not write into a staged folder.
            sandbox.put_archive(sandbox.workspace, staged, user=sandbox.agent_user)
            self.progress(f"staged {len(self.spec.inputs)} input(s) into {sandbox.workspace}")
        catalog = ""
        if registry is not None:
            loaded = load_skills(skills, registry, sandbox, catalog_budget_chars=self.spec.catalog_budget_chars,
                                 progress=self.progress, bundles=self.bundles)
            catalog = loaded.catalog_text
        memory = ""
        if self.memory is not None:
            where = sandbox.agent_path(MEMORY_DIR)
            sandbox.put_archive(where, self.memory_tar, user=sandbox.agent_user)
            memory = memory_section(where, self.memory.index_excerpt())
            self.progress(f"memory {self.memory.name}: {len(self.memory.files())} file(s) at {where}")
        return system_prompt(catalog, workspace=sandbox.workspace, skills_root=sandbox.skills_root, memory=memory,
                             isolated=self.isolated)

    def make_agent(self, model: Model, approver: Approver, sandbox: Sandbox, system_text: str) -> Agent:
        spec = self.spec
        # One clock for the run's max_seconds: the loop checks it between steps, the shell cuts
        # commands at it, and sub-agents spend it rather than starting their own.
        deadline = Deadline(spec.max_seconds)
        shell = shell_tool(sandbox, approve=approver.approve, default_timeout_ms=spec.timeout_ms,
                           max_timeout_ms=spec.timeout_ms, on_result=self.report_command, cancel=spec.cancel,
                           deadline=deadline)
        tools = [shell]
        if spec.subagents:
            from skillctl.runtime.subagent import subagent_tool

            tools.append(subagent_tool(model, system_text, [shell], limits=spec.limits, progress=self.progress,
                                       transcript_dir=self.transcript_path.with_suffix(".subagents"), cancel=spec.cancel,
                                       deadline=deadline))
        fitter = None
        if spec.compact:
            from skillctl.context import Compactor
            from skillctl.runtime.summarize import model_summarizer

            fitter = Compactor(model_summarizer(model)).fit
        self.transcript = Transcript(self.transcript_path)
        self.agent = Agent(model, ToolBox(tools), limits=spec.limits, transcript=self.transcript,
                           progress=self.progress, fitter=fitter, cancel=spec.cancel, deadline=deadline,
                           end_transcript=False)
        return self.agent

    def report_command(self, command: str, result: ExecResult | None, reason: str) -> None:
        if self.egress is not None:
            self.egress.sync()  # the command's requests reach the transcript before its result
        if result is None:
            self.progress(f"  refused: {command[:120]} ({reason})")
        elif result.outcome_type == "timeout":
            self.progress(f"  timeout: {command[:120]}")
        else:
            self.progress(f"  exit {result.exit_code} in {result.duration_s * 1000:.0f} ms: {command[:120]}")

    def report_egress(self, record: dict[str, Any]) -> None:
        """A record of the egress proxy (its own thread): into the transcript; refusals,
        warnings and failures also to ``progress`` as they happen. Never a secret value."""
        if self.transcript is not None:
            self.transcript.event(record.get("type", "egress"), **{k: v for k, v in record.items() if k not in ("type", "time")})
        if record.get("decision") == "denied":
            self.progress(f"  egress denied: {record.get('method')} {record.get('host')}:{record.get('port')} ({record.get('reason')})")
        for warning in record.get("warnings") or ():
            self.progress(f"  egress warning: {warning}")
        if record.get("error"):
            self.progress(f"  egress error: {record.get('host', '')} {record['error']}")

    # ------------------------------------------------------------------ after the loop

    def finish(self, sandbox: Sandbox, result: RunResult) -> None:
        """What happens in the sandbox after the loop, before it is removed. Nothing when it is
        unusable; no grading when the run was stopped from outside."""
        if result.outcome == SandboxFailed.outcome:
            return
        if result.outcome not in (Cancelled.outcome, Interrupted.outcome):
            self.run_checks(sandbox, result)
            if self.spec.after_run is not None:
                self.spec.after_run(sandbox, result)
        if result.outcome == Cancelled.outcome:
            return
        if self.memory is not None:
            self.save_memory(sandbox, result)
        if self.spec.output_dir is not None:
            self.copy_outputs(sandbox, result)

    def run_checks(self, sandbox: Sandbox, result: RunResult) -> None:
        for command in self.spec.checks:
            try:
                res = sandbox.exec(command, timeout_s=self.spec.check_timeout_s)
            except SandboxError as exc:
                result.warnings.append(f"checks stopped at {command!r}: {exc}")
                return
            result.checks.append(CheckResult(command, res))
            status = "timeout" if res.outcome_type == "timeout" else f"exit {res.exit_code}"
            self.progress(f"check: {status}: {command[:120]}")

    def save_memory(self, sandbox: Sandbox, result: RunResult) -> None:
        memory = self.memory
        assert memory is not None
        try:
            with sandbox.open_archive(sandbox.agent_path(MEMORY_DIR)) as chunks:
                files = memory.replace_with(chunks)
        except SkillctlError as exc:
            result.warnings.append(f"memory {memory.name} was not updated (it is as before the run): {exc}")
            return
        self.progress(f"memory {memory.name}: kept {len(files)} file(s) in {memory.folder}")

    def copy_outputs(self, sandbox: Sandbox, result: RunResult) -> None:
        """The workspace into ``spec.output_dir``, streamed (memory stays flat whatever its size)
        and unpacked as a hostile archive. A copy that fails leaves the folder as it was and is
        ``result.output_error`` (exit code 10 for a run that answered); the answer stands."""
        out = self.spec.output_dir
        assert out is not None
        try:
            with sandbox.open_archive(sandbox.workspace) as chunks:  # closed on every path
                copied = extract_outputs(chunks, out)
        except SkillctlError as exc:
            result.output_error = f"the workspace was not copied to {out}: {exc}"
            return
        result.outputs = copied.files
        result.output_notes = copied.notes()
        self.progress(f"copied {len(result.outputs)} file(s) from the workspace to {out}")
