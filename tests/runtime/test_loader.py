"""The loader against the real engine: skills land at /skills/NAME/ with their
files and modes, read-only for the agent, runnable; bad bundles are refused before anything is
copied; duplicate references and stale locks are refused."""

from __future__ import annotations

import dataclasses
import io
import tarfile
from pathlib import Path

import pytest

from skillctl.bundle import read_bundle, sha256_digest
from skillctl.errors import BundleError, IntegrityError, LoadError
from skillctl.protocols import ResolvedSkill
from skillctl.registry.local import LocalRegistry
from skillctl.project.registry_lock import lock_skills, resolve_locked
from skillctl.registry.prepare import prepare_folder
from skillctl.runtime.loader import fetch_bundles, load_skills, resolve_all

from .conftest import EXAMPLE_NAMES, EXAMPLE_SKILLS

pytestmark = [pytest.mark.requires_docker]


def write_skill(root: Path, name: str, version: str = "1.0.0", description: str | None = None) -> Path:
    folder = root / name
    (folder / "scripts").mkdir(parents=True, exist_ok=True)
    desc = description or f"Test skill {name}; use it when a test needs {name}."
    (folder / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: {desc}\nmetadata:\n  version: \"{version}\"\n---\n\n# {name}\n\nRun scripts/run.sh.\n",
        "utf-8",
    )
    script = folder / "scripts" / "run.sh"
    script.write_text(f"#!/bin/sh\necho {name} {version} ran as $(id -u)\n", "utf-8")
    script.chmod(0o755)
    return folder


def listing(sandbox, folder: str) -> dict[str, str]:
    """path -> "mode owner" of every file and folder under ``folder`` in the sandbox."""
    out = sandbox.exec(f"find {folder} -mindepth 1 -printf '%P %m %U\\n'").stdout.split("\n")
    return {p: f"{m} {u}" for p, m, u in (line.split(" ") for line in out if line)}


def test_skills_land_under_their_names_with_files_and_modes(shared_sandbox, example_registry):
    loaded = shared_sandbox.loaded
    assert [s.name for s in loaded.skills] == sorted(EXAMPLE_NAMES)
    for skill in loaded.skills:
        rs = example_registry.resolve(skill.name)
        assert (skill.path, skill.location) == (f"/skills/{skill.name}", f"/skills/{skill.name}/SKILL.md")
        assert (skill.version, skill.digest, skill.description) == (rs.version, rs.digest, rs.description)
        # Exactly the bundle's files and folders, owned by root, 0755 for executables and
        # folders, 0644 for the rest; contents byte for byte.
        bundle = read_bundle(example_registry.fetch(rs), expected_name=skill.name)
        expected = {p: ("755 0" if p in bundle.executables else "644 0") for p in bundle.files}
        expected.update({d: "755 0" for d in bundle.dirs})
        assert listing(shared_sandbox, skill.path) == expected
        assert any(p.startswith("scripts/") for p in bundle.executables)
        for rel, data in bundle.files.items():
            assert shared_sandbox.exec(f"cat /skills/{skill.name}/{rel}").stdout.encode() == data, rel
        src = EXAMPLE_SKILLS / skill.name
        assert {p.relative_to(src).as_posix() for p in src.rglob("*") if p.is_file()} == set(bundle.files)


def test_agent_can_read_and_run_but_not_change_skills(shared_sandbox):
    assert shared_sandbox.exec("id -u").stdout.strip() == "1000"
    denied = shared_sandbox.exec("touch /skills/tally/x")
    assert denied.exit_code != 0 and "Permission denied" in denied.stderr
    denied = shared_sandbox.exec("echo evil >> /skills/tally/SKILL.md")
    assert denied.exit_code != 0 and "Permission denied" in denied.stderr
    assert shared_sandbox.exec("mkdir /skills/mine").exit_code != 0
    assert shared_sandbox.exec("head -2 /skills/tally/SKILL.md").stdout == "---\nname: tally\n"
    shared_sandbox.exec("printf 'one two two\\n' > /workspace/loader-words.txt")
    ran = shared_sandbox.exec("/skills/tally/scripts/tally.py /workspace/loader-words.txt")  # by its shebang
    assert ran.ok, ran
    assert "3" in ran.stdout


def test_a_tampered_blob_is_refused_before_anything_is_copied(tmp_path, fresh_sandbox):
    with LocalRegistry(tmp_path / "reg") as reg:
        for name in ("aaa-first", "zzz-tampered"):
            reg.publish(prepare_folder(write_skill(tmp_path / "src", name)))
        bad = reg.resolve("zzz-tampered")
        blob = reg.blob_path(bad.digest)
        data = bytearray(blob.read_bytes())
        data[len(data) // 2] ^= 0x01
        blob.write_bytes(bytes(data))
        seen: list[str] = []
        with pytest.raises(IntegrityError, match="zzz-tampered|corrupt"):
            load_skills(["aaa-first", "zzz-tampered"], reg, fresh_sandbox, progress=seen.append)
    # Fetch and verify everything first, copy after: not even the good skill is in the sandbox.
    assert fresh_sandbox.exec("ls -A /skills").stdout == ""
    assert seen == []


class ServesOtherBytes:
    """A compromised registry: it answers metadata honestly but serves other bytes (e.g. a
    mirror that was tampered with). The loader must not rely on the store's own check."""

    def __init__(self, reg: LocalRegistry, swap: dict[str, bytes]) -> None:
        self.reg, self.swap = reg, swap

    def resolve(self, ref: str) -> ResolvedSkill:
        return self.reg.resolve(ref)

    def fetch(self, skill: ResolvedSkill) -> bytes:
        return self.swap.get(skill.name) or self.reg.fetch(skill)


def test_bytes_that_do_not_match_the_digest_are_refused(tmp_path, fresh_sandbox):
    with LocalRegistry(tmp_path / "reg") as reg:
        for name in ("good-one", "swapped"):
            reg.publish(prepare_folder(write_skill(tmp_path / "src", name)))
        other = prepare_folder(write_skill(tmp_path / "other", "swapped", description="Not what was published."))
        store = ServesOtherBytes(reg, {"swapped": other.data})
        with pytest.raises(IntegrityError, match=r"swapped@1\.0\.0: bundle does not match its digest"):
            load_skills(["good-one", "swapped"], store, fresh_sandbox)
    assert fresh_sandbox.exec("ls -A /skills").stdout == ""


def test_bundles_verified_before_are_loaded_without_fetching_and_must_match(tmp_path, fresh_sandbox):
    """A run fetches each bundle once (``fetch_bundles``) and hands the contents to the loader;
    contents given for another skill are refused before anything is copied."""
    with LocalRegistry(tmp_path / "reg") as reg:
        for name in ("given", "other"):
            reg.publish(prepare_folder(write_skill(tmp_path / "src", name)))
        given, other = reg.resolve("given"), reg.resolve("other")
        bundles = fetch_bundles(reg, [given, other])
        assert set(bundles) == {given.digest, other.digest}
        swapped = {given.digest: bundles[other.digest]}
        with pytest.raises(IntegrityError, match=r"given@1\.0\.0: the bundle given for it is other"):
            load_skills([given], reg, fresh_sandbox, bundles=swapped)
        assert fresh_sandbox.exec("ls -A /skills").stdout == ""
        store = ServesOtherBytes(reg, {"given": b"never fetched"})  # it would fail the digest check
        loaded = load_skills([given, other], store, fresh_sandbox, bundles={given.digest: bundles[given.digest]})
    assert [s.name for s in loaded.skills] == ["given", "other"]
    assert "given 1.0.0 ran" in fresh_sandbox.exec("/skills/given/scripts/run.sh").stdout


def _hostile_bundle(name: str) -> bytes:
    import gzip

    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        md = f"---\nname: {name}\ndescription: Hostile.\n---\n".encode()
        info = tarfile.TarInfo(f"{name}/SKILL.md")
        info.size = len(md)
        tar.addfile(info, io.BytesIO(md))
        link = tarfile.TarInfo(f"{name}/passwd")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        tar.addfile(link)
    return gzip.compress(raw.getvalue(), mtime=0)


def test_a_hostile_bundle_with_a_matching_digest_is_refused_before_copying(tmp_path, fresh_sandbox):
    data = _hostile_bundle("evil")
    evil = ResolvedSkill("skill_evil", "evil", "1.0.0", "Hostile.", sha256_digest(data))

    class Store:
        def resolve(self, ref):  # pragma: no cover - refs are already resolved
            raise AssertionError(ref)

        def fetch(self, skill):
            return data

    with pytest.raises(BundleError, match="evil"):
        load_skills([evil], Store(), fresh_sandbox)
    assert fresh_sandbox.exec("ls -A /skills").stdout == ""


def test_the_same_skill_twice_with_different_versions_is_refused(tmp_path):
    with LocalRegistry(tmp_path / "reg") as reg:
        for version in ("1.0.0", "1.1.0"):
            reg.publish(prepare_folder(write_skill(tmp_path / f"src-{version}", "twice", version)))
        with pytest.raises(LoadError) as err:
            resolve_all(reg, ["twice@1.0.0", "twice@^1.1"])
        assert str(err.value).count("\n") == 0
        assert "twice" in str(err.value) and "1.0.0" in str(err.value) and "1.1.0" in str(err.value)
        # The same version twice is one skill, not an error.
        assert [(r.name, r.version) for r in resolve_all(reg, ["twice@1.1.0", "twice@^1.1", "twice"])] == [("twice", "1.1.0")]


def test_duplicate_versions_are_refused_before_the_sandbox_is_touched(tmp_path, fresh_sandbox):
    with LocalRegistry(tmp_path / "reg") as reg:
        for version in ("1.0.0", "2.0.0"):
            reg.publish(prepare_folder(write_skill(tmp_path / f"src-{version}", "dup", version)))
        reg.publish(prepare_folder(write_skill(tmp_path / "src", "aaa-before")))
        with pytest.raises(LoadError, match="dup requested twice"):
            load_skills(["aaa-before", "dup@1.0.0", "dup@2.0.0"], reg, fresh_sandbox)
    assert fresh_sandbox.exec("ls -A /skills").stdout == ""


def test_lock_based_loading_enforces_the_pinned_digests(tmp_path, fresh_sandbox):
    with LocalRegistry(tmp_path / "reg") as reg:
        reg.publish(prepare_folder(write_skill(tmp_path / "src", "pinned")))
        lock = lock_skills({"pinned": "^1.0"}, reg)
        [locked] = lock.skills
        # The pins as the lock states them load and run.
        loaded = load_skills([resolve_locked(reg, locked)], reg, fresh_sandbox)
        assert [s.digest for s in loaded.skills] == [locked.digest]
        assert fresh_sandbox.exec("/skills/pinned/scripts/run.sh").stdout == "pinned 1.0.0 ran as 1000\n"
        # A lock that pins other bytes than the registry serves is refused.
        stale = dataclasses.replace(locked, digest="sha256:" + "0" * 64)
        with pytest.raises(IntegrityError, match="skills.lock pins"):
            resolve_locked(reg, stale)
        # Loading the pins directly (another runtime's way) fetches exactly the pinned digest.
        with pytest.raises(IntegrityError):
            load_skills([stale.as_resolved("Pinned.")], reg, fresh_sandbox)


def test_catalog_budget_overflow_warns_through_progress(example_registry, fresh_sandbox):
    seen: list[str] = []
    loaded = load_skills(list(EXAMPLE_NAMES), example_registry, fresh_sandbox, catalog_budget_chars=900, progress=seen.append)
    assert len(loaded.catalog_text) <= 900
    assert loaded.warnings and loaded.warnings[0].startswith("skills catalog over budget")
    assert seen[-1] == f"warning: {loaded.warnings[0]}"
    assert [line for line in seen if line.startswith("loaded ")] == [
        f"loaded {n}@{example_registry.resolve(n).version} -> /skills/{n}/" for n in sorted(EXAMPLE_NAMES)
    ]
    # Every skill was still copied: the budget shortens the prompt, not the sandbox.
    assert fresh_sandbox.exec("ls /skills").stdout.split() == sorted(EXAMPLE_NAMES)
