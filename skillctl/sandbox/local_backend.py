"""The ``local`` sandbox: plain subprocesses in a temporary folder. NO isolation.

For authoring skills on a machine without Docker. Commands run as the current user, with the
current user's network and files; the temporary folder only keeps the paths tidy. It is refused
unless asked for with ``allow_unsafe_local=True`` and warns on stderr when it starts.

Processes: on Linux every command runs under the same supervisor as in the container
(``skillctl.sandbox.supervisor``, compiled with the system C compiler on first use), so nothing
a command starts — ``cmd &``, ``nohup``, ``setsid``, a double fork — outlives it, by exit or by
timeout. ``keep_background`` is refused here: a kept process would outlive the sandbox itself,
on this machine, where no container takes it down. Without a C compiler,
or on a system without child subreapers (macOS), the sandbox warns when it starts and can only
kill the command's process group: processes that leave it (``setsid``) then survive. There is
no process limit: a fork bomb here is a fork bomb on this machine. The shell is ``/bin/sh``, not
whatever ``sh`` the command's PATH would find.

Paths: the sandbox folder has ``skills/``, ``workspace/``, ``tmp/`` and one folder per
``extra_dirs`` entry. Commands see these real paths (``workspace``, ``skills_root`` — also
exported to commands as ``$SKILLS_DIR`` — and ``agent_path("/memory")``); every method takes
them, and also takes the container-style names (``/skills/…``, ``/workspace/…``, ``/tmp/…``,
``/memory/…``), which it maps there.
"""

from __future__ import annotations

import io
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import IO, Any, Iterator, Sequence

from skillctl.errors import ConfigError, SandboxError, SandboxTimeout
from skillctl.fsutil import tar_data_filter
from skillctl.protocols import ExecResult
from skillctl.sandbox import cleanup
from skillctl.sandbox.heap import keep_big_blocks_mapped
from skillctl.sandbox.output import DEFAULT_CAPTURE_BYTES, DEFAULT_STEP_CAPTURE_BYTES, CappedCapture, capture_share
from skillctl.sandbox.programs import SH
from skillctl.sandbox.settings import DEFAULT_ARCHIVE_BYTES, STANDARD_DIRS, extra_dir_problems

REFUSAL = (
    "the local sandbox runs commands directly on this machine, without any isolation: "
    "pass allow_unsafe_local=True (CLI: --sandbox local --allow-unsafe-local) only for authoring "
    "on a machine without Docker, or start the Docker Engine and use the docker sandbox"
)
WARNING = (
    "warning: local sandbox: commands run on this machine as {user} with its network and files; "
    "nothing is isolated"
)
NO_SUPERVISOR = (
    "warning: local sandbox: processes a command leaves behind outside its process group (setsid, "
    "daemons) will not be killed: {reason}"
)


class LocalSandbox:
    """``skillctl.protocols.Sandbox`` as subprocesses under a temporary folder."""

    def __init__(
        self,
        *,
        allow_unsafe_local: bool = False,
        max_capture_bytes: int = DEFAULT_CAPTURE_BYTES,
        max_step_capture_bytes: int = DEFAULT_STEP_CAPTURE_BYTES,
        kill_after_s: float = 5.0,
        host_grace_s: float = 10.0,
        env: dict[str, str] | None = None,
        max_concurrency: int = 8,
        extra_dirs: Sequence[str] = (),
        keep_background: bool = False,
        max_archive_bytes: int = DEFAULT_ARCHIVE_BYTES,
        warn_stream: IO[str] | None = None,
    ) -> None:
        if allow_unsafe_local is not True:
            raise SandboxError(REFUSAL)
        if keep_background:
            raise SandboxError(
                "keep_background is not available in the local sandbox: kept processes would outlive the "
                "sandbox on this machine; use the docker sandbox, whose container ends them"
            )
        problems = extra_dir_problems(tuple(extra_dirs))
        if problems:
            raise ConfigError("invalid sandbox settings: " + "; ".join(problems))
        self._areas = STANDARD_DIRS + tuple(d[1:] for d in extra_dirs)
        self.max_capture_bytes = max_capture_bytes
        self.max_step_capture_bytes = max_step_capture_bytes
        self.kill_after_s = kill_after_s
        self.host_grace_s = host_grace_s
        self.env = dict(env or {})
        self.max_concurrency = max_concurrency
        self.max_archive_bytes = max_archive_bytes
        self._warn_stream = warn_stream
        # Named now, made at start: the paths are known (and reported) before the sandbox runs,
        # as a container's are.
        self._home = Path(tempfile.gettempdir()) / f"skillctl-local-{secrets.token_hex(8)}"
        self._root: Path | None = None
        self._supervisor: list[str] = []  # argv prefix; empty when no supervisor could be had

    def __enter__(self) -> "LocalSandbox":
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    @property
    def skills_root(self) -> str:
        return str(self._home / "skills")

    @property
    def workspace(self) -> str:
        return str(self._home / "workspace")

    @property
    def agent_user(self) -> None:
        return None  # commands run as the caller: there is no other user to hand files to

    def agent_path(self, path: str) -> str:
        return str(self._host_path(path))

    def start(self) -> None:
        if self._root is not None:
            return
        keep_big_blocks_mapped()  # command output read by many threads: see sandbox/heap.py
        stream = self._warn_stream or sys.stderr
        print(WARNING.format(user=_whoami()), file=stream, flush=True)
        try:
            self._supervisor = [str(_supervisor_binary()), "--"]
        except SandboxError as exc:
            self._supervisor = []
            print(NO_SUPERVISOR.format(reason=exc), file=stream, flush=True)
        try:
            self._home.mkdir(mode=0o700)  # private, like mkdtemp; never an existing folder
            for area in self._areas:
                (self._home / area).mkdir()
            (self._home / ".home").mkdir(mode=0o700)  # HOME, outside the workspace (not a sandbox path)
        except OSError as exc:
            raise SandboxError(f"cannot create the local sandbox folder {self._home}: {exc.strerror or exc}") from exc
        self._root = self._home
        cleanup.register(self)

    def stop(self) -> None:
        cleanup.unregister(self)
        root, self._root = self._root, None
        if root is not None:
            shutil.rmtree(root, ignore_errors=True)

    def _require_started(self) -> Path:
        if self._root is None:
            raise SandboxError("the sandbox is not started: call start() or use it in a `with` block")
        return self._root

    def _host_path(self, sandbox_path: str) -> Path:
        """The folder on this machine for a real path under the sandbox folder, or for a
        container-style one (``/skills/…``, ``/workspace/…``, ``/tmp/…``, an extra folder)."""
        root = self._require_started()
        pure = PurePosixPath(sandbox_path)
        if not pure.is_absolute() or ".." in pure.parts:
            raise SandboxError(f"sandbox paths must be absolute without '..', got {sandbox_path!r}")
        parts = pure.relative_to(root).parts if pure.is_relative_to(root) else pure.parts[1:]
        if not parts or parts[0] not in self._areas:
            places = ", ".join(f"/{a}" for a in self._areas)
            raise SandboxError(f"{sandbox_path} is outside the local sandbox: use a path under {places}")
        return root.joinpath(*parts)

    # ------------------------------------------------------------------ exec

    def exec(
        self,
        command: str,
        *,
        timeout_s: float = 60.0,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        user: str | None = None,  # ignored: no user switching without isolation
    ) -> ExecResult:
        return self._exec(command, timeout_s=timeout_s, cwd=cwd, env=env, capture=self.max_capture_bytes)

    def _exec(
        self, command: str, *, timeout_s: float, cwd: str | None, env: dict[str, str] | None, capture: int
    ) -> ExecResult:
        root = self._require_started()
        if not timeout_s > 0:
            raise SandboxError(f"timeout must be a positive number of seconds, got {timeout_s}")
        workdir = self._host_path(cwd) if cwd else root / "workspace"
        environment = {
            "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
            "HOME": str(root / ".home"),
            "TMPDIR": str(root / "tmp"),
            "LANG": "C.UTF-8",
            "SKILLS_DIR": str(root / "skills"),
        }
        environment.update(self.env)
        environment.update(env or {})
        out, err = CappedCapture(capture), CappedCapture(capture)
        started = time.monotonic()
        try:
            proc = subprocess.Popen(
                [*self._supervisor, SH, "-c", command], cwd=workdir, env=environment, stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
            )
        except OSError as exc:
            raise SandboxError(f"cannot run a command in the local sandbox: {exc}") from exc
        pumps = [_pump(proc.stdout, out), _pump(proc.stderr, err)]
        timed_out = False
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            # The whole group: the command and its children; the supervisor, on SIGTERM, also
            # kills what left the group.
            _killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=self.kill_after_s)
            except subprocess.TimeoutExpired:
                _killpg(proc.pid, signal.SIGKILL)
                try:
                    proc.wait(timeout=self.host_grace_s)
                except subprocess.TimeoutExpired:
                    raise SandboxTimeout(f"a local command survived SIGKILL for {self.host_grace_s:g} s") from None
        # Children that kept the pipes open must not hold us past the deadline.
        for pump in pumps:
            pump.join(timeout=self.host_grace_s if not timed_out else 1.0)
        if timed_out:
            _killpg(proc.pid, signal.SIGKILL)
        return ExecResult(
            stdout=out.text(),
            stderr=err.text(),
            outcome_type="timeout" if timed_out else "exit",
            exit_code=None if timed_out else proc.returncode,
            duration_s=time.monotonic() - started,
            stdout_dropped=out.dropped,
            stderr_dropped=err.dropped,
        )

    def exec_many(self, commands: Sequence[str], *, timeout_s: float = 60.0) -> list[ExecResult]:
        """Run ``commands`` concurrently; together they keep at most ``max_step_capture_bytes``."""
        if not commands:
            return []
        capture = capture_share(self.max_capture_bytes, self.max_step_capture_bytes, len(commands))
        with ThreadPoolExecutor(max_workers=min(len(commands), self.max_concurrency)) as pool:
            futures = [pool.submit(self._exec, command, timeout_s=timeout_s, cwd=None, env=None, capture=capture)
                       for command in commands]
            return [future.result() for future in futures]

    # ------------------------------------------------------------------ files

    def put_archive(self, dest_dir: str, tar_bytes: bytes, *, user: str | None = None) -> None:
        """Unpack into the mapped folder; links, devices and paths leaving it are refused."""
        dest = self._host_path(dest_dir)
        dest.mkdir(parents=True, exist_ok=True)
        try:
            with tarfile.open(fileobj=io.BytesIO(tar_bytes), mode="r:*") as archive:
                members = archive.getmembers()
                for member in members:
                    _check_member(member, dest)
                # The checks above first, the standard filter on top: it has had bypasses.
                archive.extractall(dest, members=members, **tar_data_filter())
        except tarfile.TarError as exc:
            raise SandboxError(f"put_archive into {dest_dir}: invalid or refused archive: {exc}") from exc

    def get_archive(self, path: str) -> bytes:
        with self.open_archive(path) as chunks:
            return b"".join(chunks)

    @contextmanager
    def open_archive(self, path: str, *, max_bytes: int | None = None) -> Iterator[Iterator[bytes]]:
        """A tar of ``path`` written by a thread into a pipe and read as the caller iterates,
        so no more than a pipe's worth is held; more than ``max_bytes`` (default
        ``max_archive_bytes``) raises ``SandboxError``. Leaving the block closes the pipe, which
        ends the writer."""
        source = self._host_path(path)
        if not source.exists():
            raise SandboxError(f"no such file or folder in the sandbox: {path}")
        limit = self.max_archive_bytes if max_bytes is None else max_bytes
        read_fd, write_fd = os.pipe()
        failure: list[BaseException] = []

        def write() -> None:
            try:
                with os.fdopen(write_fd, "wb") as pipe, tarfile.open(fileobj=pipe, mode="w|", format=tarfile.PAX_FORMAT) as archive:
                    archive.add(source, arcname=source.name)  # like Docker: the path's last part on top
            except BrokenPipeError:
                pass  # the reader stopped early
            except BaseException as exc:  # reported to the reader
                failure.append(exc)

        writer = threading.Thread(target=write, name="local-archive", daemon=True)
        writer.start()
        reader = os.fdopen(read_fd, "rb")
        try:
            yield self._archive_chunks(reader, writer, failure, path, limit)
        finally:
            reader.close()
            writer.join()

    @staticmethod
    def _archive_chunks(reader: IO[bytes], writer: threading.Thread, failure: list[BaseException], path: str,
                        limit: int) -> Iterator[bytes]:
        seen = 0
        for chunk in iter(lambda: reader.read(1 << 16), b""):
            seen += len(chunk)
            if seen > limit:
                raise SandboxError(f"{path} is larger than max_archive_bytes ({limit} bytes): copy less out or raise the setting")
            yield chunk
        writer.join()
        if failure:
            raise SandboxError(f"cannot archive {path} in the local sandbox: {failure[0]}")

def _check_member(member: tarfile.TarInfo, dest: Path) -> None:
    name = PurePosixPath(member.name)
    if not (member.isfile() or member.isdir()):
        raise SandboxError(f"archive member {member.name!r} is not a regular file or folder; refused")
    if name.is_absolute() or ".." in name.parts:
        raise SandboxError(f"archive member {member.name!r} would leave {dest}; refused")


def _pump(pipe: IO[bytes] | None, capture: CappedCapture) -> threading.Thread:
    def run() -> None:
        assert pipe is not None
        with pipe:
            for chunk in iter(lambda: pipe.read1(1 << 16), b""):  # type: ignore[attr-defined]
                capture.feed(chunk)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def _killpg(pid: int, signum: int) -> None:
    try:
        os.killpg(pid, signum)
    except (ProcessLookupError, PermissionError):
        pass


def _supervisor_binary() -> Path:
    """The command supervisor for this machine, or ``SandboxError`` saying why there is none."""
    if not sys.platform.startswith("linux"):
        raise SandboxError(f"{sys.platform} has no child subreapers (a Linux feature)")
    from skillctl.sandbox.supervisor import build

    return build()


def _whoami() -> str:
    try:
        import pwd

        return pwd.getpwuid(os.getuid()).pw_name
    except (ImportError, KeyError):
        return str(os.getuid())
