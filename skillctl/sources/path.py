"""A folder on this machine as a skill source: a skill kept in the project itself
(``skills: {local-helper: {path: ./skills/local-helper}}``), or a folder ``add`` was given.

``SourceSpec.location`` is the folder as written, relative to ``base`` (the project's folder);
it may be the skill folder or a folder searched for skills (``skillctl.skill.discovery``). The
files are packed as ``pack`` would pack them (``.skillignore`` honoured, links and special files
refused), so a pin's digests are those of the bundle ``publish`` would store. A folder has no
revision: ``fetch`` packs it again and refuses it with ``IntegrityError`` when its files are no
longer the pinned ones (edited since the lock was written: lock again).
"""

from __future__ import annotations

import os
from pathlib import Path

from skillctl.bundle import DEFAULT_MTIME, BundleContents, pack, read_bundle
from skillctl.errors import IntegrityError, SourceError
from skillctl.protocols import SourcePin, SourceSpec
from skillctl.sources import pin_of


class PathSource:
    kind = "path"

    def __init__(self, *, base: Path | None = None) -> None:
        self.base = Path(base) if base is not None else Path.cwd()

    def folder(self, spec: SourceSpec) -> Path:
        return Path(os.path.realpath(self.base / Path(spec.location).expanduser()))

    def _skills(self, spec: SourceSpec) -> list[tuple[Path, BundleContents]]:
        from skillctl.skill.discovery import discover

        root = self.folder(spec)
        if not root.is_dir():
            raise SourceError(f"{spec.location}: no such folder (looked at {root})")
        found = []
        for folder, shown, problem in discover(root):
            if folder is None:
                if problem is not None and problem.severity == "error":
                    raise SourceError(f"{spec.location}: {problem.format()}")
                continue
            packed = pack(folder, folder.name, mtime=DEFAULT_MTIME)
            found.append((folder, read_bundle(packed.data, expected_name=folder.name, source=str(folder))))
        return found

    def discover(self, spec: SourceSpec, *, prereleases: bool = False) -> list[SourcePin]:
        pins = []
        for folder, contents in self._skills(spec):
            rel = folder.relative_to(self.folder(spec)).as_posix()
            pins.append(pin_of(spec, contents, subdir="" if rel == "." else rel, where=str(folder)))
        if spec.name:
            pins = [p for p in pins if p.name == spec.name]
        return pins

    def resolve(self, spec: SourceSpec, *, prereleases: bool = False) -> SourcePin:
        pins = self.discover(spec)
        if not pins:
            everything = self.discover(SourceSpec(spec.kind, spec.location))
            names = ", ".join(sorted(p.name for p in everything)) or "none"
            raise SourceError(f"{spec.location}: no skill named {spec.name!r} there (skills found: {names})")
        if len(pins) > 1:
            raise SourceError(f"{spec.location}: {len(pins)} skills named {spec.name!r}; point at one folder")
        return pins[0]

    def fetch(self, pin: SourcePin) -> BundleContents:
        folder = self.folder(pin.spec) / pin.subdir if pin.subdir else self.folder(pin.spec)
        if not (folder / "SKILL.md").is_file():
            raise SourceError(f"{folder}: no SKILL.md any more; the lock pins {pin.name} from there — lock again")
        packed = pack(folder, pin.name, mtime=DEFAULT_MTIME)
        if packed.tar_digest != pin.tar_digest:
            raise IntegrityError(
                f"{pin.name}: the files in {folder} changed since the lock was written ({pin.tar_digest[:19]}… locked, "
                f"{packed.tar_digest[:19]}… now); run skillctl lock"
            )
        return read_bundle(packed.data, expected_name=pin.name, source=str(folder))

    def newest(self, spec: SourceSpec) -> SourcePin | None:
        return None
