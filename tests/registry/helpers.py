"""Builders shared by the registry tests: real skill folders on disk, real registries."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping, Union

from skillctl.registry.local import LocalRegistry
from skillctl.registry.prepare import PreparedBundle, prepare_folder

FileSpec = Union[str, bytes, tuple[Union[str, bytes], int]]


def write_skill(
    root: Path,
    name: str = "demo",
    version: str | None = "1.0.0",
    *,
    description: str = "Demo skill for registry tests; use it when testing skillctl.",
    body: str = "# Demo\n\nRun scripts/run.sh.\n",
    files: Mapping[str, FileSpec] | None = None,
) -> Path:
    """Create (or overwrite) ``root/name/`` with a valid SKILL.md and ``files``; return it.

    ``files`` maps POSIX paths to text, bytes, or ``(content, mode)``. By default the skill has
    one executable script, so modes are exercised by every round trip.
    """
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    meta = f"metadata:\n  version: \"{version}\"\n" if version is not None else ""
    (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: {description}\n{meta}---\n\n{body}", "utf-8")
    specs = {"scripts/run.sh": ("#!/bin/sh\necho ok\n", 0o755)} if files is None else files
    for rel, spec in specs.items():
        content, mode = spec if isinstance(spec, tuple) else (spec, 0o644)
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.encode() if isinstance(content, str) else content)
        os.chmod(path, mode)
    return folder


def prepared(root: Path, name: str = "demo", version: str = "1.0.0", content: str = "") -> PreparedBundle:
    """A bundle of a fresh skill folder; ``content`` varies the bytes for the same version."""
    folder = write_skill(root / f"src-{name}-{version}-{abs(hash(content))}", name, version, body=f"# Demo\n\n{content}\n")
    return prepare_folder(folder)


def tree(folder: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under ``folder`` as relative path -> (bytes, permission bits)."""
    return {
        p.relative_to(folder).as_posix(): (p.read_bytes(), p.stat().st_mode & 0o777)
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def flip_byte(path: Path, offset: int = 100) -> None:
    data = bytearray(path.read_bytes())
    data[offset % len(data)] ^= 0x01
    path.write_bytes(bytes(data))


def open_registry(path: Path) -> LocalRegistry:
    return LocalRegistry(path)


def run_cli(
    args: list[str], *, env: Mapping[str, str] | None = None, cwd: Path | None = None, prefix: tuple[str, ...] = (),
    timeout: float = 120, memory_bytes: int | None = None, cpu_seconds: int | None = None,
) -> "subprocess.CompletedProcess[str]":
    """The real console entry point in a child process: a hang is a TimeoutExpired, and with
    ``memory_bytes`` a runaway read is a MemoryError in the child instead of the machine's
    memory. With ``cpu_seconds`` the child is killed by SIGXCPU (returncode -24) once it has
    used that much CPU time — a bound on work that, unlike the wall clock, other tenants of the
    machine do not move. ``prefix`` runs it through another program (``setpriv …``, ``unshare …``)."""
    import resource
    import subprocess
    import sys

    def limit() -> None:
        if memory_bytes is not None:
            resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
        if cpu_seconds is not None:
            resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 1))

    code = "import sys; from skillctl.cli import main; main(sys.argv[1:])"
    return subprocess.run(
        [*prefix, sys.executable, "-c", code, *args], env={**os.environ, **(env or {})}, cwd=cwd,
        capture_output=True, text=True, timeout=timeout, preexec_fn=limit,
    )
