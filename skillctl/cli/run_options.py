"""The options every agent run takes, defined once for ``run``, ``eval`` and ``batch``: the model
endpoint, the limits, approval and the sandbox. Their names say what they limit in plain words;
docs/glossary.md maps them to the seeds' symbols (K, Z, c₁)."""

from __future__ import annotations

from typing import Any, Callable

import click

from skillctl.cli.common import FiniteFloatRange
from skillctl.runtime.tools import MAX_TIMEOUT_MS
from skillctl.sandbox import BACKENDS as SANDBOXES
from skillctl.sandbox.settings import MAX_CPUS

_OPTIONS = [
    click.option("--base-url", envvar="OPENAI_BASE_URL",
                 help="OpenAI-compatible endpoint (vLLM, Ollama, llama.cpp…). Env: OPENAI_BASE_URL. "
                      "The key comes from OPENAI_API_KEY."),
    click.option("--max-steps", type=click.IntRange(min=1), default=30, show_default=True,
                 help="Model calls a run may make before it stops with budget_exhausted."),
    click.option("--max-seconds", type=FiniteFloatRange(min=1),
                 help="Wall-clock budget of a run (sub-agents included); a command still running when it ends is stopped."),
    click.option("--max-tokens", type=click.IntRange(min=1),
                 help="Tokens a run may send in all (the sum of every request's context), before it stops with tokens_exhausted."),
    click.option("--context-budget", type=click.IntRange(min=1000), default=100_000, show_default=True,
                 help="Tokens per request; older tool results are cleared to fit."),
    click.option("--timeout-ms", type=click.IntRange(min=100, max=MAX_TIMEOUT_MS), default=60_000, show_default=True,
                 help="Per-command timeout: the default, and the most a model may ask for. Every command also ends "
                      "when --max-seconds does."),
    click.option("--approve", type=click.Choice(["policy", "never", "all"]), default="policy", show_default=True,
                 help="Commands the approval policy says to ask about: policy — ask on a terminal, otherwise its "
                      "'unattended' setting (deny by default; runs in parallel never ask); never — refused; all — run."),
    click.option("--sandbox", "sandbox_name", type=click.Choice(sorted(SANDBOXES)), default="docker", show_default=True,
                 help="Where commands run."),
    click.option("--allow-unsafe-local", is_flag=True, help="Permit --sandbox local (no isolation at all)."),
    click.option("--image",
                 help="Agent image (docker; default: the one `skillctl image build` makes, built on first use, by "
                      "each Ray node for its runs). Skill environments are layered on it."),
    click.option("--memory-limit", metavar="SIZE",
                 help="Container RAM limit of a run, e.g. 4g (docker; default 2g); not long-term memory (`skillctl run --memory`)."),
    click.option("--cpus", type=FiniteFloatRange(min=0.01, max=MAX_CPUS), help="Container CPU limit of a run (docker; default 1)."),
]

RUN_KEYS = ("base_url", "max_steps", "max_seconds", "max_tokens", "context_budget", "timeout_ms", "approve",
            "sandbox_name", "allow_unsafe_local", "image", "memory_limit", "cpus")
"""The parameter names the options above hand to the command."""


def run_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """Decorate a command with the options every agent run takes."""
    for option in reversed(_OPTIONS):
        f = option(f)
    return f


def sandbox_settings(memory_limit: str | None, cpus: float | None, **more: Any) -> dict[str, Any]:
    """The sandbox settings the options give, only those given: the backend's defaults apply
    otherwise, and a limit the chosen backend cannot enforce is an error, not silently dropped."""
    given = {"memory_limit": memory_limit, "cpus": cpus, **more}
    return {k: v for k, v in given.items() if v is not None}
