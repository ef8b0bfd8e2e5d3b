"""Builders for the OCI tests: real skill folders and bundles on disk."""

from __future__ import annotations

from pathlib import Path

from skillctl.registry.prepare import PreparedBundle, prepare_folder


def write_skill(root: Path, name: str = "demo", version: str | None = "1.0.0", *, body: str = "Run scripts/run.sh.",
                description: str = "Demo skill for OCI tests; use it when testing skillctl.") -> Path:
    folder = root / name
    (folder / "scripts").mkdir(parents=True, exist_ok=True)
    meta = f'metadata:\n  version: "{version}"\n' if version is not None else ""
    (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: {description}\n{meta}---\n\n# {name}\n\n{body}\n", "utf-8")
    script = folder / "scripts" / "run.sh"
    script.write_text("#!/bin/sh\necho ok\n", "utf-8")
    script.chmod(0o755)
    return folder


def bundle(root: Path, name: str = "demo", version: str = "1.0.0", content: str = "") -> PreparedBundle:
    """A bundle of a fresh folder; ``content`` varies the bytes for the same version."""
    folder = write_skill(root / f"{name}-{version}-{len(content)}-{abs(hash(content))}", name, version, body=f"Run scripts/run.sh. {content}")
    return prepare_folder(folder)


# The annotations skillctl added so that pulls need no config blob; manifests published before
# carry none of them, and are still read (through their config).
PULL_ANNOTATIONS = ("vnd.skillctl.id", "vnd.skillctl.digest", "vnd.skillctl.tar-digest")


def as_older_skillctl_published(server, repo: str, tag: str) -> None:
    """Rewrite ``repo:tag`` as an older skillctl published it: same config and layer, without
    the pull annotations."""
    import json

    doc = json.loads(server.get_manifest(repo, tag))
    for key in PULL_ANNOTATIONS:
        doc["annotations"].pop(key)
    server.put_manifest(repo, tag, doc)
