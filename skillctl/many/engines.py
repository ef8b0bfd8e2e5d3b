"""Engines run many jobs with bounded concurrency. Chosen by name, imported lazily:

    local   a pool of threads in this process, each run in its own container on this
            machine's Docker Engine (the default)
    ray     each run a Ray task on a cluster (``skillctl[ray]``); every node runs containers
            on its own Docker Engine and fetches skills from the shared registry

The contract, the same for both (``tests/many/test_engines.py`` runs one suite on each):

- ``run(jobs, on_done)`` runs every job and calls ``on_done(result)`` **on the calling thread**
  as each finishes (so the caller writes its files with no lock), in finishing order. At most
  ``jobs`` runs are in flight, and jobs are taken from the iterable only as slots free up, so
  a batch of thousands holds a few in memory.
- Ctrl-C (``KeyboardInterrupt``, or SIGTERM on the main thread) cancels: no new job starts,
  running ones stop at their next step or command and remove their containers, their results
  (outcome ``cancelled``/``interrupted``) still reach ``on_done``, then ``KeyboardInterrupt``
  propagates. A second Ctrl-C removes the containers at once.
- A job whose worker is lost (a Ray node dies) is run again elsewhere, at most ``retries``
  times; ``JobResult.attempts`` and ``retries`` say so. Past that its outcome is ``lost``.
"""

from __future__ import annotations

import importlib
import os
from typing import Any, Callable, Iterable, Protocol

from skillctl.errors import ConfigError

from .job import LABEL_BATCH, Job, JobResult

# name -> (module:class, what to install when its import fails)
ENGINES: dict[str, tuple[str, str]] = {
    "local": ("skillctl.many.local:LocalEngine", "it needs nothing beyond skillctl"),
    "ray": ("skillctl.many.ray_engine:RayEngine", "pip install 'skillctl[ray]'"),
}

DEFAULT_RETRIES = 2
# A run is a host thread plus a container; the container's memory limit is what it may take.
DEFAULT_RUN_MEMORY = 2 * 1024**3


class Engine(Protocol):
    name: str
    jobs: int  # how many runs may be in flight at once

    def run(self, jobs: Iterable[Job], on_done: Callable[[JobResult], None]) -> None: ...

    def close(self) -> None: ...

    def __enter__(self) -> Any: ...

    def __exit__(self, *exc: object) -> None: ...


def open_engine(name: str, **options: Any) -> Engine:
    """The engine ``name`` with ``options`` (``jobs``, ``retries``, ``progress``; ray:
    ``address``). An unknown name or a missing package is a one-line ``ConfigError``."""
    if name not in ENGINES:
        raise ConfigError(f"unknown engine {name!r}; use one of: {', '.join(sorted(ENGINES))}")
    target, hint = ENGINES[name]
    module_name, cls_name = target.split(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"engine {name!r} needs a package that is not installed ({exc.name}): {hint}") from None
    return getattr(module, cls_name)(**options)


def memory_available() -> int | None:
    """Bytes the kernel says new work can use (``MemAvailable``), or None off Linux."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def default_jobs(run_memory: int = DEFAULT_RUN_MEMORY, run_cpus: float = 1.0) -> int:
    """How many runs this machine can hold at once: one per ``run_cpus`` of the CPUs this process
    may use, and no more than the available memory divided by what one run may take (its
    container's memory limit) — never less than one."""
    by_cpu = int(usable_cpus() // max(run_cpus, 0.01)) or 1
    mem = memory_available()
    by_mem = max(1, mem // run_memory) if mem else by_cpu
    return max(1, min(by_cpu, by_mem))


__all__ = ["ENGINES", "LABEL_BATCH", "Engine", "default_jobs", "open_engine"]


def parse_size(text: str) -> int:
    """``2g`` / ``512m`` / ``1024k`` / bytes, as Docker reads ``--memory``."""
    units = {"b": 1, "k": 1024, "m": 1024**2, "g": 1024**3}
    t = text.strip().lower()
    try:
        if t and t[-1] in units:
            return int(float(t[:-1]) * units[t[-1]])
        return int(t)
    except ValueError:
        raise ConfigError(f"cannot read the size {text!r}; write e.g. 2g or 512m") from None
