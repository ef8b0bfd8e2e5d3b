"""``RunSpec``: everything one agent run needs, as plain data plus a few callbacks.

What a batch or an eval varies per case (task, skills, model, limits, inputs, checks) are plain
fields, so a spec can be written in a file and copied with ``dataclasses.replace``; the
callbacks (``progress``, ``after_run``) and the ``cancel`` event belong to the caller's process.
A spec holds no open resources: ``registry`` and ``model`` may be names (opened and closed by the
run) or objects the caller opened (and closes).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from skillctl.errors import ConfigError
from skillctl.protocols import Model, RegistryReader, ResolvedSkill
from skillctl.runtime.loop import Limits
from skillctl.runtime.tools import MAX_TIMEOUT_MS

if TYPE_CHECKING:
    from skillctl.egress.policy import NetworkPolicy
    from skillctl.protocols import Sandbox
    from skillctl.runtime.approval import ApprovalPolicy
    from skillctl.runtime.result import RunResult

APPROVE_MODES = ("policy", "never", "all")


@dataclass(frozen=True)
class RunSpec:
    """One run: ``run(RunSpec(task=..., skills=[...], model="script:FILE"))``.

    - ``model``: ``script:FILE``, ``openai:MODEL``, ``openai-chat:MODEL`` (with ``base_url``)
      or a ``Model`` object.
    - ``skills``: references (``NAME``, ``NAME@RANGE``, ``skill_ID[@VERSION]``) or resolved
      skills; ``lock``: a skills.lock whose skills load too, digests enforced. None at all is a
      run without skills (the baseline of an eval).
    - ``project``: the project's ``skills.yaml``, whose ``trust:`` policy then applies to every
      skill the run loads, however it was named (the CLI passes the one in the current folder).
      With a ``lock`` the policy is the one the lock was written with, for the skills in
      ``skills`` too, and the project is the skills.yaml beside the lock.
    - ``registry``: a URL (default: ``SKILLCTL_REGISTRY``, else the user folder), or an open
      registry; opened only when there are skills to load.
    - ``sandbox``: ``docker`` or ``local`` (needs ``allow_unsafe_local``); ``image``: the image
      (default: the agent image, built if missing) that the skills' environment is layered on
      (``index_url``, ``extra_index_urls``, ``allow_sdist``: where its packages come from;
      ``ignore_requires_python``: skills whose ``requires-python`` is not held against the image,
      added to the lock's and skills.yaml's lists; ``isolate_env``: skills given a venv of their
      own instead of the merged one); ``sandbox_settings``:
      backend settings, e.g. ``{"memory": "4g", "cpus": 2}`` for docker.
    - ``inputs`` are staged into the workspace; ``output_dir`` receives the workspace afterwards;
      ``memory``: long-term memory, a NAME (kept in the user data folder) or a folder path.
    - Limits: ``max_steps`` (model calls, K_max), ``max_seconds``, ``max_tokens`` (tokens sent over the run, Z), ``context_budget``
      (tokens per request), ``timeout_ms`` (per command: the default, and the most a model may
      ask for), ``catalog_budget`` (characters). ``max_seconds`` is one deadline for the run:
      a command still running then is stopped, and sub-agents spend the same time.
    - Approval: ``approve`` is ``policy`` (ask on a terminal, else the policy's unattended
      action), ``never`` or ``all``; ``policy`` an ``ApprovalPolicy`` or a policy file.
    - ``checks``: commands run in the same sandbox after the agent finished, results in
      ``RunResult.checks``; ``after_run(sandbox, result)`` is called then too, before teardown
      (an exception it raises propagates; the sandbox is removed all the same).
    - Network: ``network`` is a policy in the hosted shell tool's shape (``{"type": "allowlist",
      "allowed_domains": [...], "domain_secrets": [...]}``) or a ``NetworkPolicy``; None or
      ``{"type": "disabled"}`` is no network at all. When it allows domains, the docker sandbox
      reaches them only through an egress proxy (``skillctl.egress``): ``egress_resolve``
      (``HOST=ADDR:PORT``) and ``egress_ca`` (PEM files) reach private hosts, ``egress_log``
      receives every request as JSON Lines; ``RunResult.egress`` counts them. With ``network``
      None, a ``lock`` (or ``project``) brings its skills.yaml's ``network:`` section, as
      ``skillctl run`` does — its ``domain_secrets`` only with ``project_secrets`` (the opt-in of
      ``--project-secrets``); pass ``{"type": "disabled"}`` to run without it.
    - ``progress`` receives one line at a time; setting ``cancel`` (from any thread) stops the
      run at the next step or while commands run (not during a model call), and removes the
      sandbox. Runs on worker threads should not prompt: use ``approve="all"`` or ``"never"``,
      or a policy whose ``unattended`` action decides.
    """

    task: str
    model: str | Model
    skills: Sequence[str | ResolvedSkill] = ()
    lock: Path | None = None
    project: Path | None = None
    registry: str | RegistryReader | None = None
    base_url: str | None = None
    sandbox: str = "docker"
    allow_unsafe_local: bool = False
    image: str | None = None
    index_url: str | None = None
    extra_index_urls: Sequence[str] = ()
    allow_sdist: bool = False
    isolate_env: Sequence[str] = ()
    ignore_requires_python: Sequence[str] = ()
    sandbox_settings: Mapping[str, Any] = field(default_factory=dict)
    inputs: Sequence[Path] = ()
    output_dir: Path | None = None
    memory: str | Path | None = None
    transcript: Path | None = None  # default: a new file under the user state folder
    max_steps: int = 30
    max_seconds: float | None = None
    max_tokens: int | None = None
    context_budget: int = 100_000
    timeout_ms: int = 60_000
    catalog_budget: int | None = None  # default: 2 % of the context budget, in characters
    approve: str = "policy"
    policy: ApprovalPolicy | Path | None = None
    subagents: bool = False
    compact: bool = False
    checks: Sequence[str] = ()
    check_timeout_s: float = 300.0
    after_run: Callable[[Sandbox, RunResult], Any] | None = None
    network: Mapping[str, Any] | NetworkPolicy | None = None
    project_secrets: bool = False
    egress_resolve: Sequence[str] = ()
    egress_ca: Sequence[Path] = ()
    egress_log: Path | None = None
    progress: Callable[[str], None] | None = None
    cancel: threading.Event | None = None

    def __post_init__(self) -> None:
        problems = []
        if not isinstance(self.task, str) or not self.task.strip():
            problems.append("task must be a non-empty text")
        if isinstance(self.model, str) and not self.model.strip():
            problems.append("model is missing: name one (script:FILE, openai:MODEL, openai-chat:MODEL) or pass a Model")
        if isinstance(self.skills, str):
            problems.append("skills must be a list of references, not one string")
        if self.max_steps < 1:
            problems.append(f"max_steps must be at least 1, got {self.max_steps}")
        if self.max_seconds is not None and self.max_seconds <= 0:
            problems.append(f"max_seconds must be positive, got {self.max_seconds}")
        if self.max_tokens is not None and self.max_tokens < 1:
            problems.append(f"max_tokens must be at least 1, got {self.max_tokens}")
        if self.context_budget < 1000:
            problems.append(f"context_budget must be at least 1000 tokens, got {self.context_budget}")
        if self.timeout_ms < 100:
            problems.append(f"timeout_ms must be at least 100, got {self.timeout_ms}")
        if self.timeout_ms > MAX_TIMEOUT_MS:
            problems.append(f"timeout_ms must be at most {MAX_TIMEOUT_MS} (an hour), got {self.timeout_ms}")
        if self.catalog_budget is not None and self.catalog_budget < 200:
            problems.append(f"catalog_budget must be at least 200 characters, got {self.catalog_budget}")
        if self.approve not in APPROVE_MODES:
            problems.append(f"approve must be one of {', '.join(APPROVE_MODES)}, got {self.approve!r}")
        if isinstance(self.checks, str) or not all(isinstance(c, str) and c.strip() for c in self.checks):
            problems.append("checks must be a list of non-empty commands")
        if self.check_timeout_s <= 0:
            problems.append(f"check_timeout_s must be positive, got {self.check_timeout_s}")
        if self.lock is not None and self.project is not None and not _same_folder(self.lock, self.project):
            problems.append(f"project {self.project} is not beside lock {self.lock}: a lock's trust policy is the one of the "
                            "skills.yaml beside it (leave project out)")
        network = self.network_policy  # a bad policy is a ConfigError of its own, naming every problem
        if network is not None and network.enabled and self.sandbox != "docker":
            problems.append(f"network egress needs the docker sandbox (the {self.sandbox} sandbox has the host's whole network)")
        if (network is None or not network.enabled) and (self.egress_resolve or self.egress_ca or self.egress_log):
            problems.append("egress_resolve, egress_ca and egress_log need a network policy that allows domains")
        if problems:
            raise ConfigError("invalid run: " + "; ".join(problems))

    @property
    def network_policy(self) -> NetworkPolicy | None:
        """``network`` as a validated ``NetworkPolicy`` (None when not given)."""
        if self.network is None:
            return None
        from skillctl.egress.policy import NetworkPolicy, parse_policy

        if isinstance(self.network, NetworkPolicy):
            return self.network
        return parse_policy(dict(self.network), origin="the run's network policy")

    @property
    def limits(self) -> Limits:
        return Limits(max_steps=self.max_steps, max_seconds=self.max_seconds, max_total_tokens=self.max_tokens,
                      context_budget=self.context_budget)

    @property
    def catalog_budget_chars(self) -> int:
        # About 2 % of the context window, at ~4 characters per token (Codex uses the same share).
        return self.catalog_budget or max(200, int(self.context_budget * 0.02 * 4))


def _same_folder(a: Path, b: Path) -> bool:
    return a.resolve().parent == b.resolve().parent
