"""Options shared by the commands that start many runs (``eval``, ``batch``): the engine and its
concurrency, and what every run gets (model endpoint, limits, sandbox)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import click

from skillctl.cli.common import FiniteFloatRange, progress
from skillctl.runtime.tools import MAX_TIMEOUT_MS
from skillctl.sandbox.settings import MAX_CPUS

_OPTIONS = [
    click.option("--engine", type=click.Choice(["local", "ray"]), default="local", show_default=True,
                 help="local: a pool of runs on this machine's Docker Engine. ray: each run a Ray task on a cluster "
                      "(pip install 'skillctl[ray]'); nodes use their own Docker Engine and the shared registry."),
    click.option("--ray-address", metavar="ADDR", envvar="RAY_ADDRESS",
                 help="Ray cluster to use with --engine ray (e.g. 10.0.0.5:6379). Env: RAY_ADDRESS. Without it Ray starts on this machine."),
    click.option("-j", "--jobs", type=click.IntRange(min=1),
                 help="Runs at once. Default: local — what this machine holds (its CPUs, and available memory ÷ the "
                      "container memory limit); ray — the cluster's CPUs."),
    click.option("--retries", type=click.IntRange(min=0), default=2, show_default=True,
                 help="How often a run whose Ray node was lost is run again elsewhere."),
    click.option("--base-url", envvar="OPENAI_BASE_URL",
                 help="OpenAI-compatible endpoint. Env: OPENAI_BASE_URL. The key comes from OPENAI_API_KEY."),
    click.option("--max-steps", type=click.IntRange(min=1), default=30, show_default=True, help="K_max per run."),
    click.option("--max-seconds", type=FiniteFloatRange(min=1), help="Wall-clock budget per run, commands included."),
    click.option("--max-tokens", type=click.IntRange(min=1), help="Budget on Z per run."),
    click.option("--context-budget", type=click.IntRange(min=1000), default=100_000, show_default=True,
                 help="Tokens per request."),
    click.option("--timeout-ms", type=click.IntRange(min=100, max=MAX_TIMEOUT_MS), default=60_000, show_default=True,
                 help="Per-command timeout: the default, and the most a model may ask for."),
    click.option("--approve", type=click.Choice(["never", "all"]), default="never", show_default=True,
                 help="Commands the approval policy would ask about: refused (never) or run (all). Runs in parallel never prompt."),
    click.option("--sandbox", "sandbox_name", type=click.Choice(["docker", "local"]), default="docker", show_default=True,
                 help="Where commands run."),
    click.option("--allow-unsafe-local", is_flag=True, help="Permit --sandbox local (no isolation at all)."),
    click.option("--image", help="Agent image (default: the one `skillctl image build` makes; each Ray node builds its own)."),
    click.option("--memory-limit", metavar="SIZE", help="Container memory limit per run, e.g. 1g (default 2g)."),
    click.option("--cpus", type=FiniteFloatRange(min=0.01, max=MAX_CPUS), help="Container CPU limit per run (default 1)."),
]


def many_run_options(f: Callable[..., Any]) -> Callable[..., Any]:
    for option in reversed(_OPTIONS):
        f = option(f)
    return f


def run_settings(registry: str | None, o: dict[str, Any]) -> Any:
    """The ``RunSettings`` the shared options describe."""
    from skillctl.many.job import RunSettings

    limits = {"max_steps": o["max_steps"], "context_budget": o["context_budget"], "timeout_ms": o["timeout_ms"]}
    limits.update({k: o[k] for k in ("max_seconds", "max_tokens") if o[k] is not None})
    settings = {k: v for k, v in (("memory", o["memory_limit"]), ("cpus", o["cpus"])) if v is not None}
    return RunSettings(registry=registry, base_url=o["base_url"], limits=limits, approve=o["approve"],
                       sandbox=o["sandbox_name"], allow_unsafe_local=o["allow_unsafe_local"], image=o["image"],
                       sandbox_settings=settings)


def current_project() -> Path | None:
    """The skills.yaml in the current folder, when there is one: its trust policy applies to
    the runs' skills, as it does for ``skillctl run``."""
    from skillctl.project.spec import project_file

    project = project_file()
    return project if project.is_file() else None


def open_engine_for(o: dict[str, Any]) -> Any:
    """The engine the options name; -j defaults from the container limits a run gets."""
    from skillctl.many.engines import DEFAULT_RUN_MEMORY, default_jobs, open_engine, parse_size

    if o["engine"] == "local":
        jobs = o["jobs"] or default_jobs(parse_size(o["memory_limit"]) if o["memory_limit"] else DEFAULT_RUN_MEMORY,
                                         o["cpus"] or 1.0)
        return open_engine("local", jobs=jobs, retries=o["retries"], progress=progress)
    if o["ray_address"] is None:
        progress("starting Ray on this machine (no --ray-address)")
    return open_engine("ray", address=o["ray_address"], jobs=o["jobs"], retries=o["retries"], progress=progress)


MANY_KEYS = ("engine", "ray_address", "jobs", "retries", "base_url", "max_steps", "max_seconds", "max_tokens",
             "context_budget", "timeout_ms", "approve", "sandbox_name", "allow_unsafe_local", "image", "memory_limit", "cpus")
