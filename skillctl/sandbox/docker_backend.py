"""The Docker sandbox: one hardened container per run, one ``docker exec`` per command.

Lifecycle: ``start`` reaps orphans, then creates and starts a container whose only process
sleeps for the TTL (``container/entrypoint.sh``), as ``keepalive_user``, a uid the agent's
commands cannot signal; ``exec`` runs each command as its own exec in ``/workspace`` with an
explicit environment; ``stop`` force-removes the container and its volumes. Use it as a context
manager, or call ``stop`` in a ``finally``; see ``cleanup`` for what happens on signals and
``reaper`` for what happens after SIGKILL. When the container dies under a run, the error says
how, from the engine's events (killed from outside, out of memory, TTL), not a guess.

A command runs as ``skillctl-supervise -- timeout -k KILL_AFTER N sh -c CMD``, every one of them
by absolute path (``programs``: a skill environment's scripts come first on the command's PATH,
and must not stand in for these). Timeouts, two of them: ``timeout`` really kills the command at N (``docker exec`` forwards no signals, and the
Docker API cannot kill an exec); the host waits N + ``host_grace_s`` more, and if even that
passes, the daemon or the container is stuck and ``SandboxTimeout`` is raised. The supervisor
(``container/supervise.c``) is a child subreaper: when ``timeout`` returns, it kills and reaps
whatever the command left behind (``cmd &``, ``nohup``, ``setsid``, a fork bomb), so the exec
ends only once all of it is gone, and commands running beside it are untouched.
"""

from __future__ import annotations

import io
import os
import re
import shlex
import signal
import tarfile
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, suppress
from pathlib import PurePosixPath
from typing import Any, BinaryIO, Iterator, Sequence

from skillctl.errors import SandboxError, SandboxTimeout
from skillctl.protocols import ExecResult
from skillctl.sandbox import cleanup
from skillctl.sandbox.client import daemon_error, daemon_failures, docker_client, retry
from skillctl.sandbox.heap import keep_big_blocks_mapped
from skillctl.sandbox.programs import ID, MKDIR, SH, TIMEOUT
from skillctl.sandbox.output import CappedCapture, capture_share
from skillctl.sandbox.reaper import Owner, reap
from skillctl.sandbox.settings import (
    LABEL_EXPIRES,
    LABEL_MANAGED,
    LABEL_OWNER,
    LABEL_RUN_ID,
    SandboxSettings,
)
from skillctl.sandbox.supervisor import IMAGE_PATH as SUPERVISOR

# Exit codes of `timeout -k K N cmd` (GNU coreutils):
#   124  N passed and SIGTERM ended the command          -> outcome "timeout"
#   137  it ignored SIGTERM and SIGKILL ended it K later -> outcome "timeout" (128 + 9)
#   143  `timeout` itself got SIGTERM from outside (the container is being stopped) and passed
#        it on; that is not our deadline, so it stays an ordinary exit (128 + 15).
# A command may also exit 124 or 137 on its own (or be OOM-killed: 137) before N; only a run
# that lasted at least N counts as a timeout.
_TIMEOUT_EXIT_CODES = (124, 137)

_SAFE_USER = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")
_ARCHIVE_CHUNK = 1 << 20  # bytes read from an archive stream at a time


def _rewound(fh: BinaryIO) -> BinaryIO:
    """``fh`` from its start: a retried upload sends the whole archive again."""
    fh.seek(0)
    return fh


def _seconds(value: float) -> str:
    """A duration for GNU timeout: plain decimal seconds with a unit, never exponent form."""
    text = f"{value:.3f}".rstrip("0").rstrip(".")
    return f"{text or '0'}s"


class DockerSandbox:
    """``skillctl.protocols.Sandbox`` on a local Docker Engine. See the module docstring.

    Commands see the container's own paths, so ``agent_path`` changes nothing."""

    skills_root = "/skills"  # where skills are unpacked, as commands see it

    def __init__(self, settings: SandboxSettings | None = None, *, client: Any | None = None, **overrides: Any):
        base = settings or SandboxSettings()
        self.settings = base.replace(**overrides) if overrides else base
        self.run_id = self.settings.run_id or uuid.uuid4().hex[:12]
        self.name = f"skillctl-{self.run_id}"
        self._client = client
        self._container: Any | None = None
        self._ids: dict[str, tuple[int, int]] = {}
        self._started_at = 0.0  # epoch seconds, for saying how long the container lived
        self.reaped: list[str] = []

    # ------------------------------------------------------------------ lifecycle

    @property
    def client(self) -> Any:
        if self._client is None:
            self._client = docker_client()
        return self._client

    @property
    def container_id(self) -> str | None:
        return self._container.id if self._container is not None else None

    @property
    def workspace(self) -> str:
        return self.settings.workdir

    @property
    def agent_user(self) -> str:
        return self.settings.user

    def agent_path(self, path: str) -> str:
        if not path.startswith("/") or ".." in PurePosixPath(path).parts:
            raise SandboxError(f"sandbox paths must be absolute without '..', got {path!r}")
        return path

    def __enter__(self) -> "DockerSandbox":
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def _mounts(self) -> list[Any]:
        from docker.types import DriverConfig, Mount

        uid, gid = self._numeric_user(self.settings.user) or (0, 0)  # settings insist on uid:gid

        # tmpfs-backed *volumes*, not plain tmpfs mounts: the Docker archive API writes into a
        # plain tmpfs's underlying (hidden) folder instead of the tmpfs, and refuses every path
        # outside a volume when the root filesystem is read-only. Volumes take put_archive
        # correctly, are size-capped, and go away with the container.
        def tmpfs_volume(target: str, size: str, options: str) -> Mount:
            return Mount(
                target,
                None,
                type="volume",
                driver_config=DriverConfig(
                    "local", {"type": "tmpfs", "device": "tmpfs", "o": f"size={size},{options},nosuid,nodev"}
                ),
            )

        return [
            tmpfs_volume("/skills", self.settings.skills_size, "mode=0755,uid=0,gid=0"),
            tmpfs_volume(self.settings.workdir, self.settings.workspace_size, f"mode=0755,uid={uid},gid={gid}"),
            tmpfs_volume("/tmp", self.settings.tmp_size, "mode=1777"),
            tmpfs_volume(self.settings.home, self.settings.home_size, f"mode=0700,uid={uid},gid={gid}"),
        ] + [
            tmpfs_volume(d, self.settings.extra_dir_size, f"mode=0755,uid={uid},gid={gid}") for d in self.settings.extra_dirs
        ]

    def start(self) -> None:
        """Reap orphans, then create and start the container. Idempotent."""
        import docker.errors
        from docker.types import Ulimit

        keep_big_blocks_mapped()  # command output read by many threads: see sandbox/heap.py

        if self._container is not None:
            return
        client = self.client
        self.reaped = reap(client)
        s = self.settings
        try:
            client.images.get(s.image)
        except docker.errors.ImageNotFound:
            raise SandboxError(
                f"image {s.image} is not built: run `skillctl image build` (offline) first"
            ) from None
        except daemon_failures() as exc:
            raise daemon_error(f"looking up image {s.image}", exc) from exc
        labels = dict(s.labels)
        labels.update(
            {
                LABEL_MANAGED: "1",
                LABEL_RUN_ID: self.run_id,
                LABEL_OWNER: Owner.current().label(),
                LABEL_EXPIRES: str(int(time.time()) + s.ttl_s),
            }
        )
        cleanup.register(self)  # before create: a signal in between must still find the name
        self._started_at = time.time()
        try:
            self._container = client.containers.create(
                s.image,
                command=[str(s.ttl_s)],
                name=self.name,
                labels=labels,
                # The init and the keep-alive; commands run as ``s.user`` (see ``exec``).
                user=s.keepalive_user,
                working_dir=s.workdir,
                environment={"HOME": s.home, **dict(s.env)},
                network_mode=s.network,
                dns=list(s.dns) or None,
                cap_drop=["ALL"],
                security_opt=["no-new-privileges"],
                pids_limit=s.pids_limit,
                mem_limit=s.memory,
                memswap_limit=s.memory,  # no swap beyond the memory limit
                nano_cpus=int(s.cpus * 1e9),
                init=True,  # reaps zombies of killed commands
                read_only=s.read_only,
                auto_remove=True,  # an orphan whose TTL ran out disappears by itself
                mounts=self._mounts(),
                shm_size=s.shm_size,
                # No POSIX message queues: /dev/mqueue cannot be turned off, but with a zero
                # limit nothing can be created in it.
                ulimits=[Ulimit(name="msgqueue", soft=0, hard=0)],
                hostname="sandbox",
                stdin_open=False,
                tty=False,
            )
            self._container.start()
        except daemon_failures() as exc:
            self.stop()
            raise daemon_error(f"starting sandbox container {self.name}", exc) from exc
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """Remove the container and its volumes. Idempotent; safe after a failed start."""
        import docker.errors

        cleanup.unregister(self)
        if self._client is None:
            return
        target = self._container.id if self._container is not None else self.name
        self._container = None
        try:
            retry(lambda: self._client.api.remove_container(target, force=True, v=True))
        except docker.errors.NotFound:
            pass
        except daemon_failures() as exc:
            if "already in progress" not in str(exc):
                raise daemon_error(f"removing sandbox container {target}", exc) from exc

    def _require_started(self) -> str:
        if self._container is None:
            raise SandboxError("the sandbox is not started: call start() or use it in a `with` block")
        return self._container.id

    # ------------------------------------------------------------------ exec

    def exec(
        self,
        command: str,
        *,
        timeout_s: float = 60.0,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        user: str | None = None,
    ) -> ExecResult:
        """Run ``command`` with ``sh -c`` in its own exec; see the module docstring for timeouts."""
        return self._exec(command, timeout_s=timeout_s, cwd=cwd, env=env, user=user,
                          capture=self.settings.max_capture_bytes)

    def _exec(
        self, command: str, *, timeout_s: float, cwd: str | None, env: dict[str, str] | None, user: str | None,
        capture: int,
    ) -> ExecResult:
        cid = self._require_started()
        if not timeout_s > 0:
            raise SandboxError(f"timeout must be a positive number of seconds, got {timeout_s}")
        s = self.settings
        argv = [SUPERVISOR, *(["--keep-background"] if s.keep_background else []), "--",
                TIMEOUT, "-k", _seconds(s.kill_after_s), _seconds(timeout_s), SH, "-c", command]
        environment = {"HOME": s.home, **dict(s.env)}  # the image says /workspace: the agent's is its own
        environment.update(env or {})
        api = self.client.api
        try:
            exec_id = retry(
                lambda: api.exec_create(
                    cid, argv, stdout=True, stderr=True, stdin=False, tty=False,
                    user=user or s.user, workdir=cwd or s.workdir, environment=environment,
                )
            )["Id"]
        except daemon_failures() as exc:
            raise self._exec_error(exc) from exc

        out, err = CappedCapture(capture), CappedCapture(capture)
        started = time.monotonic()
        try:
            # Not retried: once started, the command may have run.
            stream = api.exec_start(exec_id, stream=True, demux=True)
        except daemon_failures() as exc:
            raise self._exec_error(exc) from exc
        failure: list[BaseException] = []

        def pump() -> None:
            try:
                for chunk_out, chunk_err in stream:
                    if chunk_out:
                        out.feed(chunk_out)
                    if chunk_err:
                        err.feed(chunk_err)
            except BaseException as exc:  # surfaced on the caller's thread
                failure.append(exc)

        reader = threading.Thread(target=pump, name=f"{self.name}-exec", daemon=True)
        reader.start()
        reader.join(timeout_s + s.kill_after_s + s.host_grace_s)
        if reader.is_alive():
            with suppress(Exception):
                stream.close()
            self._kill_exec(exec_id)
            raise SandboxTimeout(
                f"command still running {timeout_s + s.kill_after_s + s.host_grace_s:.0f} s after its "
                f"{timeout_s:g} s timeout; the sandbox {self.name} may be stuck: stop it and start a new one"
            )
        duration = time.monotonic() - started
        if failure:
            raise daemon_error(f"reading the output of a command in {self.name}", failure[0])
        exit_code = self._exit_code(exec_id, started + timeout_s + s.host_grace_s)
        if exit_code in (137, 143):
            self._require_running()  # killed because the whole container went away?
        timed_out = exit_code in _TIMEOUT_EXIT_CODES and duration >= timeout_s
        return ExecResult(
            stdout=out.text(),
            stderr=err.text(),
            outcome_type="timeout" if timed_out else "exit",
            exit_code=None if timed_out else exit_code,
            duration_s=duration,
            stdout_dropped=out.dropped,
            stderr_dropped=err.dropped,
        )

    def _exec_error(self, exc: Exception) -> SandboxError:
        text = str(exc)
        if "is not running" in text or "No such container" in text:
            return SandboxError(
                f"the sandbox container {self.name} is no longer running: {self._how_it_ended()}; "
                "start a new sandbox"
            )
        return daemon_error(f"running a command in {self.name}", exc)

    def _how_it_ended(self) -> str:
        """How the container ended, from the engine's events for it, in words."""
        s = self.settings
        cid = self._container.id if self._container is not None else self.name
        actions: dict[str, tuple[float, dict[str, str]]] = {}  # action -> (when, attributes), first of each
        with suppress(Exception):
            # Bounded (until a second from now, or the stream never ends); the engine keeps the
            # events of a container that is gone.
            for event in self.client.api.events(
                since=int(self._started_at) - 1, until=int(time.time()) + 1, filters={"container": cid}, decode=True
            ):
                when = float(event.get("timeNano", 0)) / 1e9 or float(event.get("time", 0))
                attributes = event.get("Actor", {}).get("Attributes", {})
                actions.setdefault(str(event.get("Action") or event.get("status")), (when, attributes))
        ending = [actions[a][0] for a in ("oom", "kill", "die", "destroy") if a in actions]
        lived_s = (min(ending) if ending else time.time()) - self._started_at
        lived = f"{max(0.0, lived_s):.0f} s after it started"
        if "oom" in actions:
            return f"it ran out of memory (limit {s.memory}) {lived}"
        if lived_s >= s.ttl_s - 1:
            # Its keep-alive ended, or the reaper removed it (anyone's reaper may, once expired).
            return f"its TTL of {s.ttl_s} s ran out"
        if "kill" in actions:
            return (
                f"it was killed from outside (signal {actions['kill'][1].get('signal', '?')}: `docker kill`, "
                f"`docker stop` or `docker rm -f`) {lived}, not by its TTL of {s.ttl_s} s"
            )
        if "die" in actions:
            code = actions["die"][1].get("exitCode", "?")
            return f"its keep-alive process ended (exit code {code}) {lived}, before its TTL of {s.ttl_s} s"
        if "destroy" in actions:
            return f"it was removed from outside {lived}, not by its TTL of {s.ttl_s} s"
        return f"it disappeared {lived} and the engine recorded no reason (removed from outside, or the engine restarted)"

    def _require_running(self, settle_s: float = 0.3) -> None:
        """Raise if the container is gone or going. A command killed by SIGKILL/SIGTERM may
        have died with its container; the daemon records that a moment later, hence the
        short wait (paid only after such exits)."""
        cid = self._require_started()
        give_up = time.monotonic() + settle_s
        while True:
            try:
                state = retry(lambda: self.client.api.inspect_container(cid))["State"]
            except daemon_failures() as exc:
                raise self._exec_error(exc) from exc
            if not state.get("Running") or state.get("Status") in ("removing", "exited", "dead"):
                raise self._exec_error(RuntimeError("container is not running"))
            if time.monotonic() >= give_up:
                return
            time.sleep(0.05)

    def _exit_code(self, exec_id: str, deadline: float) -> int:
        api = self.client.api
        # The stream can end a moment before the daemon records the exit code; a stopped
        # container's exec never gets one.
        stopped_at: float | None = None
        while True:
            try:
                info = retry(lambda: api.exec_inspect(exec_id))
            except daemon_failures() as exc:
                raise self._exec_error(exc) from exc
            if not info.get("Running"):
                if info.get("ExitCode") is not None:
                    return int(info["ExitCode"])
                stopped_at = stopped_at or time.monotonic()
                if time.monotonic() - stopped_at > 2.0:
                    raise SandboxError(
                        f"a command in {self.name} ended without an exit code (was the container "
                        "stopped?): start a new sandbox"
                    )
            if time.monotonic() > deadline:
                raise SandboxTimeout(f"the daemon never reported how a command in {self.name} ended")
            time.sleep(0.005)

    def _kill_exec(self, exec_id: str) -> None:
        """Best effort, after the host deadline: tell the exec's supervisor to kill its tree.

        Only possible when the daemon runs on this machine (its pids are ours) and we may signal
        the agent's uid; otherwise the container's TTL and ``stop`` end it. SIGCONT first: a
        stopped supervisor would never act on the SIGTERM.
        """
        with suppress(Exception):
            pid = int(self.client.api.exec_inspect(exec_id).get("Pid") or 0)
            if pid > 0 and str(self.client.api.base_url).startswith("http+docker://localhost"):
                os.kill(pid, signal.SIGCONT)
                os.kill(pid, signal.SIGTERM)

    def exec_many(self, commands: Sequence[str], *, timeout_s: float = 60.0) -> list[ExecResult]:
        """Run ``commands`` concurrently, each in its own exec; results in input order.

        If a command cannot be run at all, the first such error (in input order) is raised after
        every command has finished. Together they keep at most ``max_step_capture_bytes`` of
        output (``capture_share``), so eight floods at once cost no more than one.
        """
        if not commands:
            return []
        s = self.settings
        capture = capture_share(s.max_capture_bytes, s.max_step_capture_bytes, len(commands))
        workers = min(len(commands), s.max_concurrency)
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix=f"{self.name}-many") as pool:
            futures = [
                pool.submit(self._exec, command, timeout_s=timeout_s, cwd=None, env=None, user=None, capture=capture)
                for command in commands
            ]
            return [future.result() for future in futures]

    # ------------------------------------------------------------------ files

    @staticmethod
    def _numeric_user(user: str) -> tuple[int, int] | None:
        if user == "root":
            return 0, 0
        uid, _, gid = user.partition(":")
        if uid.isdigit() and (not gid or gid.isdigit()):
            return int(uid), int(gid or uid)
        return None

    def _user_ids(self, user: str) -> tuple[int, int]:
        """Numeric uid/gid for ``user`` ("root", "uid[:gid]", or a name known to the image)."""
        ids = self._numeric_user(user)
        if ids is not None:
            return ids
        if user not in self._ids:
            if not _SAFE_USER.match(user):
                raise SandboxError(f"invalid user name {user!r}: use a name from the image or uid:gid")
            result = self.exec(f"{ID} -u {user} && {ID} -g {user}", timeout_s=10, user="0:0", cwd="/")
            lines = result.stdout.split()
            if not result.ok or len(lines) != 2:
                raise SandboxError(f"no user {user!r} in image {self.settings.image}: use uid:gid instead")
            self._ids[user] = (int(lines[0]), int(lines[1]))
        return self._ids[user]

    @staticmethod
    def _chown_tar(tar_bytes: bytes, uid: int, gid: int) -> bytes:
        src = tarfile.open(fileobj=io.BytesIO(tar_bytes), mode="r:*")
        buf = io.BytesIO()
        seen: set[str] = set()
        with src, tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as dst:
            for member in src:
                # Folders the archive only implies would be created by the daemon as root,
                # leaving ``user`` unable to write in them: add them explicitly.
                parents = [p.as_posix() for p in reversed(PurePosixPath(member.name).parents)]
                for parent in parents:
                    if parent not in (".", "/") and parent not in seen:
                        seen.add(parent)
                        folder = tarfile.TarInfo(parent)
                        folder.type, folder.mode, folder.mtime = tarfile.DIRTYPE, 0o755, member.mtime
                        folder.uid, folder.gid = uid, gid
                        dst.addfile(folder)
                seen.add(member.name.rstrip("/"))
                member.uid, member.gid, member.uname, member.gname = uid, gid, "", ""
                dst.addfile(member, src.extractfile(member) if member.isfile() else None)
        return buf.getvalue()

    def put_archive(self, dest_dir: str, tar_bytes: bytes | BinaryIO, *, user: str | None = None) -> None:
        """Unpack ``tar_bytes`` into ``dest_dir`` through the Docker archive API.

        ``tar_bytes`` may be an open, seekable file instead of bytes: it is streamed to the
        engine, never read whole (owners then stay as in the archive: no ``user``).
        Owners are kept as in the archive, or set to ``user`` when given. A missing
        ``dest_dir`` is created (as ``user``, or root) first. Only ``/skills``, the workdir and
        ``/tmp`` are writable: the root filesystem is read-only.
        """
        import docker.errors

        cid = self._require_started()
        if not dest_dir.startswith("/"):
            raise SandboxError(f"put_archive needs an absolute folder in the sandbox, got {dest_dir!r}")
        streamed = not isinstance(tar_bytes, (bytes, bytearray))
        if streamed and user is not None:
            raise SandboxError("put_archive streams a tar file with the owners it names; give bytes to set a user")
        if user is not None:
            try:
                tar_bytes = self._chown_tar(tar_bytes, *self._user_ids(user))
            except tarfile.TarError as exc:
                raise SandboxError(f"put_archive got an invalid tar archive: {exc}") from exc
        api = self.client.api
        for attempt in (1, 2):
            try:
                # Unpacking the same archive twice gives the same files: safe to retry.
                if retry(lambda: api.put_archive(cid, dest_dir, _rewound(tar_bytes) if streamed else tar_bytes)):
                    return
                raise SandboxError(f"the daemon refused to unpack an archive into {dest_dir}")
            except docker.errors.NotFound as exc:
                if attempt == 2 or "No such container" in str(exc):
                    raise self._exec_error(exc) from exc
                self._mkdir(dest_dir, user)
            except daemon_failures() as exc:
                if "read-only" in str(exc):
                    *first, last = ["/skills", self.settings.workdir, "/tmp", *self.settings.extra_dirs]
                    raise SandboxError(
                        f"cannot write to {dest_dir}: the sandbox's root filesystem is read-only; "
                        f"put files under {', '.join(first)} or {last}"
                    ) from exc
                raise daemon_error(f"copying files into {dest_dir}", exc) from exc

    def _mkdir(self, path: str, user: str | None) -> None:
        result = self.exec(f"{MKDIR} -p -- {shlex.quote(path)}", timeout_s=10, user=user or "0:0", cwd="/")
        if not result.ok:
            reason = (result.stderr.strip().splitlines() or [f"exit code {result.exit_code}"])[-1]
            raise SandboxError(f"cannot create {path} in the sandbox: {reason}")

    def get_archive(self, path: str) -> bytes:
        """A tar of ``path`` (file or folder) from the sandbox, at most ``max_archive_bytes``."""
        with self.open_archive(path) as chunks:
            return b"".join(chunks)

    @contextmanager
    def open_archive(self, path: str, *, max_bytes: int | None = None) -> Iterator[Iterator[bytes]]:
        """A tar of ``path`` as chunks read from the daemon while the caller iterates; more than
        ``max_bytes`` (default ``max_archive_bytes``) raises ``SandboxError``. The response is
        closed when the block ends, however it ends: the daemon holds the container while it
        streams an archive, and a stream left open made removing the container hang for minutes."""
        import docker.errors

        cid = self._require_started()
        limit = self.settings.max_archive_bytes if max_bytes is None else max_bytes
        api = self.client.api
        # The SDK's own get_archive hands back a generator over the response, which cannot close
        # it; this is the same request with the response kept.
        try:
            response = retry(lambda: api._get(api._url("/containers/{0}/archive", cid), params={"path": path},
                                              stream=True))
            try:
                api._raise_for_status(response)
            except BaseException:
                response.close()
                raise
        except docker.errors.NotFound as exc:
            if "No such container" in str(exc):
                raise self._exec_error(exc) from exc
            raise SandboxError(f"no such file or folder in the sandbox: {path}") from exc
        except daemon_failures() as exc:
            raise daemon_error(f"copying {path} out of the sandbox", exc) from exc
        try:
            yield self._archive_chunks(response, path, limit)
        finally:
            response.close()

    def _archive_chunks(self, response: Any, path: str, limit: int) -> Iterator[bytes]:
        import requests.exceptions

        seen = 0
        try:
            for chunk in response.iter_content(_ARCHIVE_CHUNK):
                seen += len(chunk)
                if seen > limit:
                    raise SandboxError(
                        f"{path} is larger than max_archive_bytes ({limit} bytes): copy less out (fewer or "
                        "smaller files) or raise the setting"
                    )
                yield chunk
        except requests.exceptions.RequestException as exc:
            raise daemon_error(f"copying {path} out of the sandbox", exc) from exc
