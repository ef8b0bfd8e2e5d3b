"""The per-command supervisor: a tiny static C program (``container/supervise.c``).

Every command a sandbox runs goes through it: it makes itself a child subreaper, runs the
command, and when the command ends kills and reaps everything the command started (``cmd &``,
``nohup``, ``setsid``, double forks, fork bombs), touching nothing else. See the source's header
for the details.

It is C, not Python, because it sits on every command's path: a static binary adds about a
millisecond, a Python interpreter tens (``bench/exec_latency.py`` compares against a bare
``docker exec``). It is compiled here, on the host, with the system C compiler (``$CC``, else
``cc`` or ``gcc``) and linked statically, so it runs in any Linux image of the same
architecture; the image build copies it in, and the local backend runs it directly. Builds are
cached per source hash in the user cache folder.
"""

from __future__ import annotations

import hashlib
import os
import platform
import shutil
import subprocess
import tempfile
from pathlib import Path

from skillctl.errors import SandboxError

SOURCE_NAME = "supervise.c"
BINARY_NAME = "skillctl-supervise"
IMAGE_PATH = f"/usr/local/bin/{BINARY_NAME}"  # where the agent image has it
CFLAGS = ("-static", "-Os", "-s", "-Wall")


def source_path() -> Path:
    from skillctl.sandbox.image import container_dir

    return container_dir() / SOURCE_NAME


def compiler() -> str:
    """The C compiler to use; ``SandboxError`` saying what to install when there is none."""
    configured = os.environ.get("CC")
    if configured:
        found = shutil.which(configured)
        if found is None:
            raise SandboxError(f"CC={configured} is not an executable; unset CC or point it at a C compiler")
        return found
    found = shutil.which("cc") or shutil.which("gcc")
    if found is None:
        raise SandboxError(
            "no C compiler to build the command supervisor (container/supervise.c): "
            "`apt-get install -y gcc libc6-dev` (or set CC)"
        )
    return found


def _cache_dir() -> Path:
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("skillctl")) / "supervisor"


def build(source: Path | None = None) -> Path:
    """The compiled supervisor for ``source`` (default: the image context's), built if missing.

    Raises ``SandboxError`` saying what to install when there is no working C compiler or no
    static C library.
    """
    source = source or source_path()
    try:
        code = source.read_bytes()
    except OSError as exc:
        raise SandboxError(f"cannot read the supervisor source {source}: {exc.strerror}") from None
    key = hashlib.sha256(code + " ".join(CFLAGS).encode()).hexdigest()[:16]
    target = _cache_dir() / f"{key}-{platform.machine()}" / BINARY_NAME
    if target.is_file() and os.access(target, os.X_OK):
        return target
    cc = compiler()
    target.parent.mkdir(parents=True, exist_ok=True)
    # Compile beside the target and rename: concurrent builds never see a half-written binary.
    fd, tmp = tempfile.mkstemp(prefix=f".{BINARY_NAME}-", dir=target.parent)
    os.close(fd)
    try:
        proc = subprocess.run(
            [cc, *CFLAGS, "-o", tmp, str(source)],
            stdin=subprocess.DEVNULL, capture_output=True, text=True, errors="replace", timeout=300,
        )
        if proc.returncode != 0:
            lines = proc.stderr.strip().splitlines()
            errors = [line for line in lines if "error" in line]
            detail = (errors or lines[-1:] or [f"exit status {proc.returncode}"])[0]
            raise SandboxError(
                f"building the command supervisor with {cc} failed ({detail}); a static C library is "
                "needed too: `apt-get install -y gcc libc6-dev`"
            )
        os.chmod(tmp, 0o755)
        os.replace(tmp, target)
    except (OSError, subprocess.SubprocessError) as exc:
        raise SandboxError(f"building the command supervisor with {cc} failed: {exc}") from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return target
