"""Options shared by the commands that start many runs (``eval``, ``batch``): the engine and its
concurrency, plus what every run gets (``run_options``, shared with ``run``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import click

from skillctl.cli.common import progress
from skillctl.cli.run_options import RUN_KEYS, run_options, sandbox_settings

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
]


def many_run_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """The engine options, then the options every agent run takes (``run_options``)."""
    for option in reversed(_OPTIONS):
        f = option(f)
    return run_options(f)


def run_settings(registry: str | None, o: dict[str, Any]) -> Any:
    """The ``RunSettings`` the shared options describe."""
    from skillctl.many.job import RunSettings

    limits = {"max_steps": o["max_steps"], "context_budget": o["context_budget"], "timeout_ms": o["timeout_ms"]}
    limits.update({k: o[k] for k in ("max_seconds", "max_tokens") if o[k] is not None})
    settings = sandbox_settings(o["memory_limit"], o["cpus"])
    # Runs in parallel never prompt: "policy" is then its unattended setting, which for the
    # default policy (these commands take no --policy) is to refuse, as "never" does.
    approve = "never" if o["approve"] == "policy" else o["approve"]
    return RunSettings(registry=registry, base_url=o["base_url"], limits=limits, approve=approve,
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

    run_memory = parse_size(o["memory_limit"]) if o["memory_limit"] else DEFAULT_RUN_MEMORY
    if run_memory <= 0:  # -j divides the machine's memory by it
        raise click.BadParameter(f"{o['memory_limit']!r} is no RAM limit; write e.g. 2g or 512m", param_hint="'--memory-limit'")
    if o["engine"] == "local":
        jobs = o["jobs"] or default_jobs(run_memory, o["cpus"] or 1.0)
        return open_engine("local", jobs=jobs, retries=o["retries"], progress=progress)
    if o["ray_address"] is None:
        progress("starting Ray on this machine (no --ray-address)")
    return open_engine("ray", address=o["ray_address"], jobs=o["jobs"], retries=o["retries"], progress=progress)


MANY_KEYS = ("engine", "ray_address", "jobs", "retries", *RUN_KEYS)
