"""The seams of skillctl, as protocols.

The agent loop knows a ``Model`` and a ``Sandbox``; the loader knows a ``Store`` and a
``Sandbox``; lockfiles, ``copy`` and the registry commands know a ``Registry``. Concrete backends
(Docker, local subprocesses, the folder registry, OCI, the scripted and OpenAI models) live at
the edges and are chosen by name by their factories (``skillctl.sandbox.open_sandbox``,
``skillctl.registry.open_registry``, ``skillctl.models.open_model``); nothing here imports them.
A new backend is done when it satisfies its protocol and passes that protocol's conformance
suite (``tests/registry/test_conformance.py``, ``tests/sandbox/test_conformance.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ContextManager, Iterator, Literal, Protocol, Sequence, runtime_checkable

from skillctl.messages import Message, ToolCall

if TYPE_CHECKING:  # the registry's plain records; imported for annotations only (no cycle)
    from skillctl.bundle.read import BundleContents
    from skillctl.registry.prepare import PreparedBundle
    from skillctl.registry.records import Problem, PublishResult, SkillRecord, VersionRecord
    from skillctl.registry.refs import SkillRef

# ---------------------------------------------------------------------------- sandbox


@dataclass(frozen=True)
class ExecResult:
    """What one command did. A non-zero exit is data, not an exception; so is a timeout
    (``outcome_type == "timeout"``) — the model is told and may try something else."""

    stdout: str
    stderr: str
    outcome_type: Literal["exit", "timeout"]
    exit_code: int | None = None
    duration_s: float = 0.0
    # Bytes dropped by the capture cap (the flood never reached host memory).
    stdout_dropped: int = 0
    stderr_dropped: int = 0

    @property
    def ok(self) -> bool:
        return self.outcome_type == "exit" and self.exit_code == 0

    def to_dict(self) -> dict[str, Any]:
        """The hosted shell tool's result shape."""
        outcome: dict[str, Any] = {"type": self.outcome_type}
        if self.outcome_type == "exit":
            outcome["exit_code"] = self.exit_code
        return {"stdout": self.stdout, "stderr": self.stderr, "outcome": outcome}


@runtime_checkable
class Sandbox(Protocol):
    """An isolated place to run commands, with a filesystem for inputs and outputs.

    Contract (``tests/sandbox/test_conformance.py`` checks it for every backend):

    - Lifecycle: unstarted when made; ``start()`` (or ``with sandbox:``) makes it usable,
      ``stop()`` (or leaving the ``with`` block) removes everything, and is idempotent. Any other
      call on an unstarted sandbox raises ``SandboxError``.
    - ``exec`` returns an ``ExecResult`` for any command that ran: a non-zero exit is data, and
      so is a timeout (``outcome_type == "timeout"``, the command and its children killed). It
      raises ``SandboxError`` only when the sandbox itself is unusable, and ``SandboxTimeout``
      when even the host-side deadline passed. Each command starts in ``workspace``.
    - ``exec_many`` runs commands concurrently, each in its own session; results in input order.
    - Paths are always as commands see them: ``workspace`` (the agent's writable folder),
      ``skills_root`` (read-only for the agent) and ``agent_path(p)`` for the container-style
      names ``/workspace``, ``/skills``, ``/tmp`` and any extra folder the sandbox was opened
      with (``extra_dirs``, e.g. ``/memory``). A container shows those names as they are; the
      unisolated local backend maps them to folders on this machine.
    - Files move as tar archives (``put_archive``/``get_archive``/``open_archive``), never
      through bind mounts; ``put_archive(..., user=agent_user)`` makes staged files the agent's
      own. An archive of ``path`` has the path's last part as its top folder.
    - ``open_archive`` streams: a context manager giving the archive as chunks read while the
      caller iterates, so copying out costs one chunk of memory whatever the size. More than
      ``max_bytes`` (default: the backend's own cap) raises ``SandboxError`` from the iterator,
      and leaving the ``with`` block closes the stream on every path, read whole or not — a
      backend may hold the sandbox while a stream is open. ``get_archive`` is the same, whole,
      as bytes (for small folders).
    """

    @property
    def workspace(self) -> str:
        """The agent's working folder as commands see it (where every command starts)."""
        ...

    @property
    def skills_root(self) -> str:
        """Where skills are unpacked, as commands see it (read-only for the agent)."""
        ...

    @property
    def agent_user(self) -> str | None:
        """The user files staged for the agent should belong to (``put_archive(user=…)``);
        None when the backend has only one user (the local backend runs as the caller)."""
        ...

    def agent_path(self, path: str) -> str:
        """Where the container-style ``path`` (``/workspace/…``, ``/skills/…``, ``/tmp/…``, an
        extra folder) is for commands; ``SandboxError`` for a path outside the sandbox's folders."""
        ...

    def start(self) -> None: ...

    def stop(self) -> None: ...

    def __enter__(self) -> Any: ...

    def __exit__(self, *exc: object) -> None: ...

    def exec(
        self,
        command: str,
        *,
        timeout_s: float = 60.0,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        user: str | None = None,
    ) -> ExecResult: ...

    def exec_many(self, commands: Sequence[str], *, timeout_s: float = 60.0) -> list[ExecResult]:
        """Run ``commands`` concurrently, each in its own session; results in input order."""
        ...

    def put_archive(self, dest_dir: str, tar_bytes: bytes, *, user: str | None = None) -> None: ...

    def get_archive(self, path: str) -> bytes: ...

    def open_archive(self, path: str, *, max_bytes: int | None = None) -> ContextManager[Iterator[bytes]]:
        """A tar of ``path`` as a stream of chunks: ``with sandbox.open_archive(p) as chunks:``."""
        ...


# ---------------------------------------------------------------------------- store


@dataclass(frozen=True)
class ResolvedSkill:
    """One exact skill version a reference resolved to.

    ``artifact_type`` says how the bytes ``fetch`` returns are laid out: ``bundle`` (skillctl's
    .skill.tgz, one top folder), or the well-known format's ``archive`` (.tar.gz or .zip, files
    at the root) or ``skill-md`` (a lone SKILL.md); ``skillctl.bundle.read_artifact`` reads all
    three. ``index_url`` is the immutable index this version was found in, when the store has
    one (a well-known site's versioned snapshot), so a lock can pin it. ``manifest`` is, for a
    skill read from an MCP server, the ``sha256:`` of the file list its entry declares
    (``skillctl.mcp.entry.manifest_digest``): a lock pins it, and resolving again with
    ``manifest=`` refuses a server that now declares other files before any file is read.
    """

    id: str  # stable skill id, "skill_…"
    name: str
    version: str
    description: str
    digest: str  # "sha256:…" of the artifact's bytes (for a bundle: the .skill.tgz)
    tar_digest: str = ""  # "sha256:…" of the uncompressed tar, stable across zlib versions
    size: int = 0
    yanked: bool = False
    artifact_type: str = "bundle"
    index_url: str = ""
    manifest: str = ""


@runtime_checkable
class Store(Protocol):
    """Where bundles live. ``resolve`` reads metadata only; ``fetch`` returns bundle bytes
    whose sha256 has been checked against ``ResolvedSkill.digest``."""

    def resolve(self, ref: str) -> ResolvedSkill: ...

    def fetch(self, skill: ResolvedSkill) -> bytes: ...


# ---------------------------------------------------------------------------- registry

# What a registry can do besides reading, as named in ``RegistryReader.capabilities``. An
# operation whose capability is missing raises ``UnsupportedError`` (never a silent no-op).
PUBLISH = "publish"  # publish (with an original created_at / skill_id, for mirrors)
YANK = "yank"  # set_yanked
REMOVE = "remove"  # remove a version nobody can depend on yet
GC = "gc"  # delete unreferenced storage
RECORD_LOCKS = "record_locks"  # mark_locked: remember that a lockfile pins a version
SIGN = "sign"  # attach_signature: keep a signature envelope with a version
WRITE_CAPABILITIES = frozenset({PUBLISH, YANK, REMOVE, GC, RECORD_LOCKS, SIGN})


@runtime_checkable
class RegistryReader(Store, Protocol):
    """What every registry can do: read. A read-only backend (a web index, a mirror) implements
    this and refuses the ``Registry`` writes with ``UnsupportedError``
    (``skillctl.registry.readonly.ReadOnlyRegistry`` does that for it).

    Semantics every backend shares (the conformance suite checks them): versions are SemVer and
    a version's identity is its order (``1.0.0+a`` and ``1.0.0+b`` are one version); ranges never
    match yanked versions or, unless asked, pre-releases, while an exact version always resolves;
    ``fetch`` returns bytes whose sha256 is ``skill.digest`` or raises ``IntegrityError``;
    missing skills and versions raise ``NotFoundError`` with a one-line message naming them.
    """

    capabilities: frozenset[str]  # a subset of WRITE_CAPABILITIES; empty for read-only registries

    @property
    def url(self) -> str: ...

    def resolve(self, ref: str, *, prereleases: bool = False, index_url: str = "") -> ResolvedSkill:
        """``index_url``: where a lock says it found this version (``ResolvedSkill.index_url``, a
        well-known site's versioned index); registries without per-version indexes resolve by
        name and version alone. A backend whose records carry a ``manifest`` (an MCP server)
        also takes ``manifest=``, the pinned one, and refuses another before reading any file."""
        ...

    def resolve_record(self, ref: str | SkillRef, *, prereleases: bool = False) -> VersionRecord: ...

    def versions(self, name_or_id: str) -> list[VersionRecord]:
        """Every version of a skill, yanked ones included, newest first."""
        ...

    def list_skills(self) -> list[SkillRecord]: ...

    def get_skill(self, name_or_id: str) -> SkillRecord: ...

    def verify(self) -> list[Problem]:
        """Re-read and re-hash what the registry holds; errors mean damage."""
        ...

    def signatures(self, skill: ResolvedSkill) -> list[bytes]:
        """The signature envelopes kept with this exact version (name, version and bundle digest;
        ``IntegrityError`` when the registry's version has another digest), as stored, oldest
        first, unverified: ``skillctl.trust`` decides what they prove. [] when there are none or
        the registry keeps none."""
        ...

    def close(self) -> None: ...

    def __enter__(self) -> Any: ...

    def __exit__(self, *exc: object) -> None: ...


@runtime_checkable
class Registry(RegistryReader, Protocol):
    """A registry one can also write to. Each write belongs to one capability; a backend without
    it raises ``UnsupportedError`` saying why and what to do instead.

    - ``publish`` (PUBLISH): store a version; the same bytes again are "unchanged", other bytes
      under a published version raise ``ImmutableVersionError``. ``created_at`` (unix seconds)
      and ``skill_id`` keep a copied version's publish time and, for a skill new to this
      registry whose id is free, its id.
    - ``set_yanked`` (YANK): hide from ranges and ``latest``; exact pins keep working.
    - ``remove`` (REMOVE): delete a version only while nobody can depend on it.
    - ``gc`` (GC): delete unreferenced storage older than ``grace_s``.
    - ``mark_locked`` (RECORD_LOCKS): remember that a lockfile pins the version (``remove``
      then refuses it).
    - ``attach_signature`` (SIGN): keep a signature envelope with a version, beside any others;
      the same bytes again are "unchanged". Signatures stay through ``set_yanked``; ``remove``
      deletes them with the version.
    """

    def publish(
        self, bundle: PreparedBundle, *, created_at: int | None = None, skill_id: str | None = None
    ) -> PublishResult: ...

    def set_yanked(self, ref: str, yanked: bool, reason: str = "") -> VersionRecord: ...

    def remove(self, ref: str) -> VersionRecord: ...

    def gc(self, *, dry_run: bool = False, grace_s: int = 3600) -> list[str]: ...

    def mark_locked(self, skill: ResolvedSkill) -> None: ...

    def attach_signature(self, skill: ResolvedSkill, envelope: bytes) -> str:
        """"attached", or "unchanged" when these exact bytes are already kept with the version."""
        ...


# ---------------------------------------------------------------------------- sources


@dataclass(frozen=True)
class SourceSpec:
    """Where a project takes one skill from, as ``skills.yaml`` or ``skillctl add`` says it.

    ``kind`` is ``registry`` (``location`` a registry URL: a folder, ``oci://…`` or a well-known
    site ``https://…``; ``ref`` a version range), ``git`` (``location`` a repository URL as git
    takes it — ``https://``, ``ssh://``, ``file://``, or ``git://``/``http://`` with ``insecure``;
    ``ref`` a tag, branch or commit, "" for the remote's default branch; ``subdir`` the folder in
    the repository to take the skill from or to search, "" for the whole repository) or ``path``
    (``location`` a folder on this machine, as written: relative to the project). ``name`` is
    the skill's name; "" while a source is searched for the skills it holds.
    """

    kind: str
    location: str
    ref: str = ""
    subdir: str = ""
    name: str = ""


@dataclass(frozen=True)
class SourcePin:
    """What a ``SourceSpec`` resolved to, exactly: installing a pin twice gives the same files.

    ``revision`` is what the source itself pins — a registry's skill id, a git commit (40 hex),
    "" for a folder; ``version`` the SemVer the skill carries ("" when it has none, possible for
    git and folders); ``subdir`` where in the source the skill was found. ``digest`` is the
    ``sha256:`` of the artifact (a registry's bundle; for git and folders the canonical
    ``.skill.tgz`` ``pack`` would make) and ``tar_digest`` that of the canonical uncompressed tar,
    the content's identity whatever the source. ``extra`` holds what one kind needs to find the
    pin again (a site's versioned index, an artifact type, a signer), JSON-ready.
    """

    spec: SourceSpec
    name: str
    version: str
    revision: str
    digest: str
    tar_digest: str
    size: int
    subdir: str = ""
    description: str = ""
    extra: dict[str, Any] = field(default_factory=dict, compare=False)


@runtime_checkable
class Source(Protocol):
    """One kind of place skills come from. Each answers the same questions, so the project
    layer never asks which kind it holds (``skillctl.sources.open_source`` picks by kind):

    - ``discover(spec)``: every skill the spec points at (a repository or folder may hold many),
      each resolved — for git, at the commit ``spec.ref`` names now;
    - ``resolve(spec)``: the one skill named ``spec.name``, resolved (``SourceError``, or
      ``NotFoundError`` for a registry, when there is none, naming what there is);
    - ``fetch(pin)``: its files, checked like a bundle (sizes, counts, names, no links), and
      refused with ``IntegrityError`` unless they are exactly the pinned ones (``tar_digest``);
    - ``newest(spec)``: the newest pin regardless of the spec's range or ref (for ``outdated``:
      a registry's latest version, a git remote's default-branch head), or None if the kind has
      no such notion (a folder).

    Everything from a source is hostile until checked: ``fetch`` returns only checked contents.
    """

    kind: str

    def discover(self, spec: SourceSpec, *, prereleases: bool = False) -> list[SourcePin]: ...

    def resolve(self, spec: SourceSpec, *, prereleases: bool = False) -> SourcePin: ...

    def fetch(self, pin: SourcePin) -> "BundleContents": ...

    def newest(self, spec: SourceSpec) -> SourcePin | None: ...


# ---------------------------------------------------------------------------- model


@dataclass(frozen=True)
class ToolSpec:
    """What the model is told about a tool: name, description, JSON Schema of its parameters."""

    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(frozen=True)
class ModelReply:
    """One model turn: text and/or tool calls. No tool calls means a final answer."""

    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    input_tokens: int | None = None  # as reported by the API, when it reports them
    output_tokens: int | None = None
    raw: dict[str, Any] = field(default_factory=dict, compare=False)


@runtime_checkable
class Model(Protocol):
    """``v_k = M(c_k)``. The model only proposes; it never runs anything."""

    name: str

    def complete(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> ModelReply: ...
