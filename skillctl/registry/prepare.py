"""Turning what a user hands to ``publish`` (a skill folder or a bundle file) into one checked,
versioned bundle. The registry never stores a skill the validator rejects, and a bundle is
opened with the hostile-archive checks before anything in it is believed."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skillctl.bundle import BUNDLE, BundleContents, pack, read_artifact, read_bundle, repack, write_contents
from skillctl.errors import SkillError, VersionError
from skillctl.registry.records import MirroredFrom
from skillctl.skill import Skill, check_skill, check_skill_any_profile, load_skill
from skillctl.skill.model import version_hint
from skillctl.versioning import SemVer


@dataclass(frozen=True)
class PreparedBundle:
    name: str
    version: str
    description: str
    front_matter: dict[str, Any]
    data: bytes
    digest: str
    tar_digest: str
    files: tuple[str, ...]
    mirrored_from: MirroredFrom | None = None  # set when the bundle was converted from a well-known artifact

    @property
    def size(self) -> int:
        return len(self.data)


def choose_version(skill: Skill, override: str | None, where: str) -> str:
    declared = skill.version
    if override is not None:
        v = SemVer.parse(override)
        if declared is not None and not SemVer.parse(declared).same_as(v):
            raise VersionError(
                f"{where}: --version {override} contradicts metadata.version {declared} in SKILL.md; "
                f"bump it with: skillctl version {where} {override}"
            )
        return str(v)
    if declared is None:
        raise VersionError(f"{where}: no version; {version_hint(where)}")
    return str(SemVer.parse(declared))


def prepare_folder(folder: Path, *, version: str | None = None, mtime: int | None = None, profile: str = "spec") -> PreparedBundle:
    """Validate (under ``profile``: a client's documented fields are then accepted) and pack."""
    return prepare_skill(load_skill(folder, profile), version=version, mtime=mtime)


def prepare_skill(skill: Skill, *, version: str | None = None, mtime: int | None = None) -> PreparedBundle:
    """Pack a skill that has already been validated (``check_skill``/``load_skill``)."""
    folder = skill.path
    ver = choose_version(skill, version, str(folder))
    packed = pack(folder, skill.name, mtime=mtime)
    return PreparedBundle(
        skill.name, ver, skill.description, skill.front_matter(), packed.data, packed.digest, packed.tar_digest, packed.files
    )


def prepare_bundle_bytes(data: bytes, *, source: str, version: str | None = None, profile: str | None = "spec") -> PreparedBundle:
    """Check a bundle from elsewhere: safe to open, a valid skill inside (under ``profile``; None:
    under the spec or any client profile, for bundles a registry already took in), a usable
    version."""
    return _prepare_contents(read_bundle(data, source=source), data, source=source, version=version, profile=profile)


def prepare_artifact_bytes(
    data: bytes, artifact_type: str, *, name: str, source: str, version: str | None = None,
    mirrored_from: MirroredFrom | None = None, profile: str | None = "spec",
) -> PreparedBundle:
    """Check any skill artifact (see ``read_artifact``) like a bundle from elsewhere. A
    well-known archive or SKILL.md becomes the bundle ``pack`` would make of its files;
    ``mirrored_from`` (the original artifact's URL and digest) travels with it into the record."""
    contents = read_artifact(data, artifact_type, expected_name=name, source=source)
    if artifact_type == BUNDLE:
        return _prepare_contents(contents, data, source=source, version=version, mirrored_from=mirrored_from, profile=profile)
    packed = repack(contents)
    converted = BundleContents(
        contents.name, contents.files, contents.executables, contents.dirs, packed.digest, packed.tar_digest, packed.size
    )
    return _prepare_contents(converted, packed.data, source=source, version=version, mirrored_from=mirrored_from, profile=profile)


def _prepare_contents(
    contents: BundleContents, data: bytes, *, source: str, version: str | None, mirrored_from: MirroredFrom | None = None,
    profile: str | None = "spec",
) -> PreparedBundle:
    with tempfile.TemporaryDirectory(prefix="skillctl-check-") as tmp:
        # The contents are already verified: write them as they are instead of parsing the
        # archive a second time; a scratch folder needs no fsync per file.
        folder = write_contents(contents, Path(tmp), durable=False)
        if profile is None:
            report = check_skill_any_profile(folder, contents.name)
        else:
            report = check_skill(folder, contents.name, profile)
        if report.skill is None:
            first = report.errors[0].format() if report.errors else "invalid skill"
            raise SkillError(f"bundle {source} holds an invalid skill: {first}")
        skill = report.skill
    ver = choose_version(skill, version, source)
    return PreparedBundle(
        skill.name, ver, skill.description, skill.front_matter(), data, contents.digest, contents.tar_digest,
        tuple(sorted(contents.files)), mirrored_from,
    )


def prepare_path(path: Path, *, version: str | None = None, profile: str = "spec") -> PreparedBundle:
    """A skill folder or a bundle file, as ``publish`` takes them, validated under ``profile``."""
    if path.is_dir():
        return prepare_folder(path, version=version, profile=profile)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SkillError(f"cannot read {path}: {exc.strerror or exc}") from None
    return prepare_bundle_bytes(data, source=str(path), version=version, profile=profile)
