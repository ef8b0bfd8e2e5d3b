"""Code that runs in child processes for the concurrency and crash tests (importable by name,
so it works with the ``spawn`` start method too)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from skillctl.errors import ImmutableVersionError
from skillctl.registry.local import LocalRegistry
from skillctl.registry.prepare import prepare_folder

from .helpers import write_skill


def publish_many(reg_path: str, worker: int, jobs: list[tuple[str, str, str]], barrier: Any, results: Any) -> None:
    """Publish ``(name, version, content)`` jobs; report ``(worker, name, version, outcome, digest)``.

    Bundles are prepared before the barrier so that the publishes themselves overlap.
    """
    with tempfile.TemporaryDirectory(prefix=f"pub{worker}-") as tmp:
        bundles = []
        for i, (name, version, content) in enumerate(jobs):
            folder = write_skill(Path(tmp) / str(i), name, version, body=f"# {name}\n\n{content}\n")
            bundles.append(prepare_folder(folder))
        barrier.wait()
        reg = LocalRegistry(Path(reg_path))  # several processes may create it at once
        try:
            for bundle in bundles:
                try:
                    outcome = reg.publish(bundle).status
                except ImmutableVersionError:
                    outcome = "immutable"
                results.put((worker, bundle.name, bundle.version, outcome, bundle.digest))
        finally:
            reg.close()


def publish_forever(reg_path: str, ready: Any, log_path: str) -> None:
    """Publish fresh versions until killed; after each commit, append the version to a log."""
    with tempfile.TemporaryDirectory(prefix="crash-") as tmp:
        # A bigger file makes the blob write long enough for kills to land inside it too.
        payload = os.urandom(256 * 1024).hex()
        n = 0
        ready.set()
        while True:
            version = f"{os.getpid() % 1000}.{n}.0"
            folder = write_skill(Path(tmp) / str(n), "crashy", version, files={"assets/data.txt": payload[n:] + str(n)})
            reg = LocalRegistry(Path(reg_path))
            reg.publish(prepare_folder(folder))
            reg.close()
            with open(log_path, "a") as log:
                log.write(version + "\n")
            n += 1


def open_new(reg_path: str, worker: int, barrier: Any, results: Any) -> None:
    """Open (so create) the registry at ``reg_path`` the moment every other worker does; report
    ``(worker, "ok")`` or ``(worker, the error)``."""
    barrier.wait()
    try:
        reg = LocalRegistry(Path(reg_path))
        try:
            reg.list_skills()
        finally:
            reg.close()
        results.put((worker, "ok"))
    except Exception as exc:  # noqa: BLE001 - any failure is the result under test
        results.put((worker, f"{type(exc).__name__}: {exc}"))
