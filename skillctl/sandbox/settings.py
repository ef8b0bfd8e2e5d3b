"""Settings of the Docker sandbox: hardened by default, overridable per run.

Every default denies: no network, no capabilities, no privilege gain, bounded processes,
memory and CPU, a read-only root filesystem, a non-root user. The only writable places are
size-capped tmpfs: ``/workspace`` (the agent's), its HOME ``/home/agent`` (outside the workspace,
so caches written there never come back with ``--output``), ``/tmp``, ``/dev/shm`` (POSIX shared memory and
semaphores, which Python's multiprocessing needs), and ``/skills`` (writable only by root, which
is how skills are copied in; the agent can only read it) — plus one more, the agent's, per
``extra_dirs`` entry (e.g. ``/memory`` for long-term memory). ``/dev/mqueue`` is closed: the
message-queue limit is 0, so no queue can be created.

Two users: commands run as ``user``; the container's own processes (its init and the keep-alive
that holds it open for the TTL) run as ``keepalive_user``, a different unprivileged uid, so a
command cannot end its own sandbox (``pkill sleep``, ``kill -9 -1``).

Every command runs under the supervisor (``container/supervise.c``): when it ends, by exit or by
timeout, everything it started is killed. ``keep_background=True`` lets processes that let go of
the command's output (``nohup srv > log 2>&1 &``) outlive a command that exited by itself.

Override per run with keyword arguments (``open_sandbox("docker", memory="4g")``) or
``SandboxSettings.from_mapping`` for a config file's ``sandbox:`` section.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Mapping

from skillctl.errors import ConfigError
from skillctl.sandbox.output import DEFAULT_CAPTURE_BYTES, DEFAULT_STEP_CAPTURE_BYTES


DEFAULT_ARCHIVE_BYTES = 512 * 1024 * 1024  # the most an archive copied out of a sandbox may hold


# Docker takes a CPU limit as an integer of nano-CPUs; past this the number means nothing (Docker
# refuses more CPUs than the host has) and soon no longer fits.
MAX_CPUS = 4096.0

@dataclass(frozen=True)
class SandboxSettings:
    image: str = "skillctl-agent:latest"
    memory: str = "2g"  # hard limit, swap included (memswap = memory)
    cpus: float = 1.0
    pids_limit: int = 256  # a fork bomb hits this, not the host
    network: str = "none"  # off by default; when a policy allows domains, egress goes only through a proxy
    dns: tuple[str, ...] = ()  # DNS servers Docker's embedded resolver forwards to (default: the host's)
    user: str = "1000:1000"  # the image's `agent`; numeric so any base image works
    keepalive_user: str = "65534:65534"  # nobody: the container's init and keep-alive, out of the agent's reach
    ttl_s: int = 3600  # the container's entrypoint sleeps this long, then it exits by itself
    workdir: str = "/workspace"
    # The agent's HOME: its own tmpfs outside the workspace, so what tools cache there
    # (~/.cache/onnxruntime, ~/.config, pip's cache) never comes back with the outputs.
    home: str = "/home/agent"
    read_only: bool = True
    workspace_size: str = "1g"
    tmp_size: str = "256m"
    home_size: str = "256m"
    skills_size: str = "256m"
    shm_size: str = "64m"  # /dev/shm
    max_capture_bytes: int = DEFAULT_CAPTURE_BYTES  # per stream, per command
    max_step_capture_bytes: int = DEFAULT_STEP_CAPTURE_BYTES  # all streams of one exec_many together
    max_archive_bytes: int = DEFAULT_ARCHIVE_BYTES  # open_archive/get_archive refuse more than this
    kill_after_s: float = 5.0  # `timeout -k`: SIGKILL this long after SIGTERM
    host_grace_s: float = 10.0  # host deadline = command timeout + this
    env: tuple[tuple[str, str], ...] = ()  # extra environment for every command
    labels: tuple[tuple[str, str], ...] = ()  # extra container labels
    run_id: str | None = None  # default: a fresh random id per sandbox
    max_concurrency: int = 8  # exec_many runs at most this many commands at once
    extra_dirs: tuple[str, ...] = ()  # more top-level folders the agent may write, e.g. ("/memory",)
    extra_dir_size: str = "64m"  # size cap of each extra folder (= the long-term memory's cap)
    keep_background: bool = False  # let detached services outlive the command that started them

    def __post_init__(self) -> None:
        problems = []
        if not 0 < self.cpus <= MAX_CPUS:  # also false for nan
            problems.append(f"cpus must be > 0 and at most {MAX_CPUS:g}, got {self.cpus}")
        if self.pids_limit < 8:
            problems.append(f"pids_limit must be at least 8, got {self.pids_limit}")
        if self.ttl_s < 10:
            problems.append(f"ttl_s must be at least 10 seconds, got {self.ttl_s}")
        if self.max_capture_bytes < 1024:
            problems.append(f"max_capture_bytes must be at least 1024, got {self.max_capture_bytes}")
        if self.max_step_capture_bytes < 2048:
            problems.append(f"max_step_capture_bytes must be at least 2048, got {self.max_step_capture_bytes}")
        if not self.workdir.startswith("/"):
            problems.append(f"workdir must be an absolute path, got {self.workdir!r}")
        home = self.home.rstrip("/")
        if not home.startswith("/") or ".." in home.split("/"):
            problems.append(f"home must be an absolute path, got {self.home!r}")
        elif home == self.workdir.rstrip("/") or home.startswith(self.workdir.rstrip("/") + "/") \
                or self.workdir.startswith(home + "/"):
            problems.append(f"home ({self.home}) must be outside the workdir ({self.workdir}): caches written there "
                            "would come back with the outputs")
        uid, _, gid = self.user.partition(":")
        if not (uid.isdigit() and (not gid or gid.isdigit())):
            problems.append(f"user must be numeric uid[:gid] (it owns the workspace mount), got {self.user!r}")
        keeper, _, keeper_gid = self.keepalive_user.partition(":")
        if not (keeper.isdigit() and (not keeper_gid or keeper_gid.isdigit())):
            problems.append(f"keepalive_user must be numeric uid[:gid], got {self.keepalive_user!r}")
        elif uid.isdigit() and int(keeper) == int(uid):
            problems.append(
                f"keepalive_user must have another uid than user ({self.user}): a command could kill the "
                "keep-alive and end its own sandbox"
            )
        if self.max_concurrency < 1:
            problems.append(f"max_concurrency must be at least 1, got {self.max_concurrency}")
        problems += extra_dir_problems(self.extra_dirs)
        if problems:
            raise ConfigError("invalid sandbox settings: " + "; ".join(problems))

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> "SandboxSettings":
        """Build from a plain mapping (config file, CLI options); unknown keys are an error.
        ``memory_limit`` is the container's RAM limit (the field ``memory``, a name that also means
        long-term memory elsewhere); ``memory`` is still read, for one release."""
        if "memory_limit" in values:
            if "memory" in values:
                raise ConfigError("give the container RAM limit once: memory_limit (memory is its old name)")
            values = {("memory" if k == "memory_limit" else k): v for k, v in values.items()}
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ConfigError(
                f"unknown sandbox setting(s): {', '.join(unknown)}; valid ones: {', '.join(sorted(known))}"
            )
        clean: dict[str, Any] = dict(values)
        if isinstance(clean.get("dns"), (list, tuple)):
            clean["dns"] = tuple(str(d) for d in clean["dns"])
        for key in ("env", "labels"):
            if isinstance(clean.get(key), Mapping):
                clean[key] = tuple(sorted((str(k), str(v)) for k, v in clean[key].items()))
        if isinstance(clean.get("extra_dirs"), list):
            clean["extra_dirs"] = tuple(clean["extra_dirs"])
        try:
            return cls(**clean)
        except TypeError as exc:
            raise ConfigError(f"invalid sandbox settings: {exc}") from exc

    def replace(self, **changes: Any) -> "SandboxSettings":
        return dataclasses.replace(self, **changes)


# Folders every sandbox has, and the system's own: an extra folder may be none of them.
STANDARD_DIRS = ("skills", "workspace", "tmp")
_SYSTEM_DIRS = ("bin", "boot", "dev", "etc", "home", "lib", "lib32", "lib64", "media", "mnt", "opt", "proc", "root",
                "run", "sbin", "srv", "sys", "usr", "var")


def extra_dir_problems(dirs: Any) -> list[str]:
    """What is wrong with ``extra_dirs`` (shared by every backend): each must be one new
    top-level folder such as ``/memory``, so it can be a volume of its own in a container."""
    if not isinstance(dirs, tuple) or not all(isinstance(d, str) for d in dirs):
        return [f"extra_dirs must be a list of folder paths like '/memory', got {dirs!r}"]
    problems = []
    for d in dirs:
        name = d[1:]
        if not d.startswith("/") or not name or "/" in name or name in (".", ".."):
            problems.append(f"extra_dirs: {d!r} is not a top-level folder like '/memory'")
        elif name in STANDARD_DIRS or name in _SYSTEM_DIRS:
            problems.append(f"extra_dirs: {d!r} is already a folder of the sandbox or the system; choose another name")
    if len(set(dirs)) != len(dirs):
        problems.append(f"extra_dirs: {', '.join(sorted({d for d in dirs if dirs.count(d) > 1}))} listed twice")
    return problems


DEFAULT_SETTINGS = SandboxSettings()

# Labels on every container this package starts; the reaper looks only at these.
LABEL_MANAGED = "org.skillctl.managed"
LABEL_RUN_ID = "org.skillctl.run-id"
LABEL_OWNER = "org.skillctl.owner"
LABEL_EXPIRES = "org.skillctl.expires"
