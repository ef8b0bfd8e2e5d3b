"""Editing ``skills.yaml`` the way a person would: ``add`` and ``remove`` change one entry and
leave every comment, blank line, quoting style and the order of everything else as it was (uv edits
``pyproject.toml`` with a format-preserving TOML library; ruamel.yaml's round-trip mode is that for
YAML). A new entry goes at the end of ``skills:``; a file that does not exist yet is created with
just that section. The edit is written atomically, and the result is read back through
``parse_project`` before it replaces the file, so an edit never leaves a file skillctl would refuse.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from skillctl.errors import LockError
from skillctl.fsutil import write_atomic
from skillctl.project.spec import Project, parse_project


def _yaml() -> Any:
    from ruamel.yaml import YAML

    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.indent(mapping=2, sequence=4, offset=2)
    yaml.width = 4096  # never fold a long URL
    return yaml


def _load(path: Path) -> tuple[Any, Any]:
    from ruamel.yaml.error import YAMLError

    yaml = _yaml()
    if not path.exists():
        from ruamel.yaml.comments import CommentedMap

        return yaml, CommentedMap()
    try:
        doc = yaml.load(path.read_text("utf-8"))
    except YAMLError as exc:
        raise LockError(f"{path}: cannot be edited: {str(exc).splitlines()[0]}; fix the YAML first") from None
    if doc is None:
        from ruamel.yaml.comments import CommentedMap

        doc = CommentedMap()
    if not hasattr(doc, "keys"):
        raise LockError(f"{path}: expected a mapping with 'skills:'; fix the file first")
    return yaml, doc


def _flow(value: Any) -> Any:
    """A mapping entry written on one line, as people write them (``{git: …, ref: …}``)."""
    if isinstance(value, dict):
        from ruamel.yaml.comments import CommentedMap

        flow = CommentedMap(value)
        flow.fa.set_flow_style()
        return flow
    return value


def _write(path: Path, yaml: Any, doc: Any) -> Project:
    buf = io.StringIO()
    yaml.dump(doc, buf)
    text = buf.getvalue()
    import yaml as pyyaml

    project = parse_project(pyyaml.safe_load(text), path)  # never write a file skillctl would refuse
    write_atomic(path, text)
    return project


def set_entry(path: Path, name: str, value: Any) -> Project:
    """``skills.NAME = value`` (a range string or a source mapping), everything else kept."""
    yaml, doc = _load(path)
    skills = doc.get("skills")
    if skills is None:
        from ruamel.yaml.comments import CommentedMap

        skills = CommentedMap()
        doc["skills"] = skills
    if not hasattr(skills, "keys"):
        raise LockError(f"{path}: skills: is not a mapping; fix the file first")
    skills[name] = _flow(value)
    return _write(path, yaml, doc)


def remove_entry(path: Path, name: str) -> Project:
    """Drop ``skills.NAME`` (``LockError`` when it is not there), everything else kept."""
    yaml, doc = _load(path)
    skills = doc.get("skills")
    if not hasattr(skills, "keys") or name not in skills:
        declared = ", ".join(sorted(skills)) if hasattr(skills, "keys") else ""
        raise LockError(f"{path}: no skill {name!r} declared (declared: {declared or 'none'})")
    del skills[name]
    return _write(path, yaml, doc)


def add_targets(path: Path, names: list[str]) -> Project:
    """Append agent names to ``targets:`` (those not there yet), everything else kept."""
    yaml, doc = _load(path)
    targets = doc.get("targets")
    if targets is None:
        from ruamel.yaml.comments import CommentedSeq

        targets = CommentedSeq()
        targets.fa.set_flow_style()
        doc["targets"] = targets
    elif isinstance(targets, str):
        from ruamel.yaml.comments import CommentedSeq

        targets = CommentedSeq([targets])
        targets.fa.set_flow_style()
        doc["targets"] = targets
    for name in names:
        if name not in targets:
            targets.append(name)
    return _write(path, yaml, doc)


def snapshot(path: Path) -> bytes | None:
    """The file's bytes before an edit (None: it did not exist), for ``restore``."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def restore(path: Path, before: bytes | None) -> None:
    """Undo edits after a later step failed: the file as it was, or gone if it was not there."""
    if before is None:
        path.unlink(missing_ok=True)
    else:
        write_atomic(path, before.decode("utf-8"))
