"""What ``publish`` or ``pack`` would do, worked out without writing anything (``--dry-run``).

Each input is validated and packed in memory exactly as the real command does it
(``prepare_path``), then compared with where it would go:

    publish: new        the registry does not hold this version (or there is no registry yet)
             unchanged  it holds this version with the same bytes (publishing is a no-op)
             refused    invalid, no version, other bytes under a published version, or a
                        registry that cannot publish; ``reason`` says which
    pack:    new / unchanged (OUT already holds the same bytes) / changed (OUT holds another
             file of that name, which pack replaces) / refused; ``target`` is the file

Nothing here creates a registry, a bundle file or a folder.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, Union

from skillctl.bundle import bundle_filename, read_bundle, sha256_digest
from skillctl.errors import NotFoundError, SkillctlError
from skillctl.protocols import PUBLISH, Registry
from skillctl.registry.prepare import PreparedBundle, prepare_path

Prepared = Union[PreparedBundle, SkillctlError]


@dataclass(frozen=True)
class PlannedFile:
    path: str  # relative to the skill folder
    size: int
    digest: str

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "size": self.size, "digest": self.digest}


@dataclass(frozen=True)
class Planned:
    """One input and what would happen to it."""

    source: str  # the folder or bundle file given
    status: str  # see the module docstring
    name: str | None = None
    version: str | None = None
    digest: str = ""
    tar_digest: str = ""
    size: int = 0
    files: tuple[PlannedFile, ...] = ()
    target: str = ""  # pack: the bundle file it would write
    reason: str = ""  # why it is refused

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source, "status": self.status, "name": self.name, "version": self.version,
            "digest": self.digest, "tar_digest": self.tar_digest, "size": self.size,
            "files": [f.to_dict() for f in self.files], **({"target": self.target} if self.target else {}),
            "reason": self.reason,
        }


def prepare_each(paths: Iterable[Path], *, version: str | None = None, profile: str = "spec") -> Iterator[tuple[Path, Prepared]]:
    """Each input as ``publish`` prepares it: the checked bundle, or the error refusing it."""
    for path in paths:
        try:
            yield path, prepare_path(path, version=version, profile=profile)
        except SkillctlError as exc:
            yield path, exc


def plan_publish(prepared: Iterable[tuple[Path, Prepared]], registry: Registry | None) -> list[Planned]:
    """What publishing ``prepared`` to ``registry`` would do; ``registry`` None: it does not
    exist yet (publish would create it), so every valid input is new. Only reads."""
    out: list[Planned] = []
    seen: dict[tuple[str, str], tuple[str, str]] = {}  # (name, version) -> (digest, source) of this run
    for path, item in prepared:
        if isinstance(item, SkillctlError):
            out.append(Planned(str(path), "refused", reason=str(item)))
            continue
        status, reason = "new", ""
        earlier = seen.get((item.name, item.version))
        if earlier is not None:
            # publish goes in order: the earlier input of this run is what the registry will hold
            status, reason = ("unchanged", "") if earlier[0] == item.digest else (
                "refused", f"{item.name}@{item.version} has other content in {earlier[1]}, published before it in this run")
        elif registry is not None:
            status, reason = _against(registry, item)
        seen.setdefault((item.name, item.version), (item.digest, str(path)))
        out.append(_planned(path, item, status, reason))
    return out


def _against(registry: Registry, item: PreparedBundle) -> tuple[str, str]:
    if PUBLISH not in registry.capabilities:
        return "refused", f"{registry.url} cannot be published to (read-only for you, or a site); choose another --registry"
    try:
        rec = registry.resolve_record(f"{item.name}@{item.version}", prereleases=True)
    except NotFoundError:
        return "new", ""
    if rec.digest == item.digest:
        return "unchanged", ""
    return "refused", (f"{item.name}@{rec.version} is already published with other content ({rec.digest[:19]}…, now "
                       f"{item.digest[:19]}…); versions are immutable — bump it: skillctl version PATH patch")


def plan_pack(prepared: Iterable[tuple[Path, Prepared]], out_dir: Path) -> list[Planned]:
    """What ``pack -o out_dir`` would write for ``prepared``. Only reads."""
    out: list[Planned] = []
    for path, item in prepared:
        if isinstance(item, SkillctlError):
            out.append(Planned(str(path), "refused", reason=str(item)))
            continue
        try:
            target = Path(out_dir) / bundle_filename(item.name, item.version)
        except SkillctlError as exc:
            out.append(Planned(str(path), "refused", item.name, item.version, reason=str(exc)))
            continue
        status = "new"
        if target.is_file():
            same = target.stat().st_size == item.size and sha256_digest(target.read_bytes()) == item.digest
            status = "unchanged" if same else "changed"
        out.append(_planned(path, item, status, "", str(target)))
    return out


def _planned(path: Path, item: PreparedBundle, status: str, reason: str, target: str = "") -> Planned:
    contents = read_bundle(item.data, source=str(path))  # the bundle's own files, as a reader sees them
    files = tuple(PlannedFile(rel, len(data), sha256_digest(data)) for rel, data in sorted(contents.files.items()))
    return Planned(str(path), status, item.name, item.version, item.digest, item.tar_digest, item.size, files, target, reason)
