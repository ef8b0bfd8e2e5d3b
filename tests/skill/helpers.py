"""Builders and probes shared by the validator tests (plain functions, importable by any test)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Iterable, Mapping, Union

from skillctl.skill.diagnostics import Diagnostic
from skillctl.skill.validate import SkillReport, validate_paths

DESCRIPTION = "Demo skill used by the validator tests; use it when testing skillctl."
BODY = "\n# Demo\n\nFollow these steps.\n"
# With the default front matter SKILL.md reads:
#   1 ---   2 name: demo   3 description: …   4 ---   5 (blank: first body line)   6 # Demo …
BODY_START = 5

FileSpec = Union[str, bytes, tuple[Union[str, bytes], int]]
# Front matter for a skill pack and publish take as it is: `skillctl validate` notes one without
# a version (SK303), so CLI tests about other findings give their skills this.
VERSIONED = 'metadata:\n  version: "1.0.0"\n'


def front_matter(name: str = "demo", description: str = DESCRIPTION, extra: str = "") -> str:
    return f"name: {name}\ndescription: {description}\n{extra}"


def make_skill(
    root: Path,
    name: str = "demo",
    front_matter_text: str | None = None,
    body: str | None = None,
    files: Mapping[str, FileSpec] | None = None,
    *,
    folder: str | None = None,
    skill_md: bytes | None = None,
) -> Path:
    """Create ``root/<folder or name>/`` holding a SKILL.md and ``files``; return the folder.

    SKILL.md is ``---\\n`` + front matter + ``---\\n`` + body, or exactly ``skill_md`` when given.
    ``files`` maps POSIX paths to text, bytes, or ``(content, mode)`` for an explicit mode.
    """
    skill = root / (folder if folder is not None else name)
    skill.mkdir(parents=True, exist_ok=True)
    if skill_md is None:
        fm = front_matter(name) if front_matter_text is None else front_matter_text
        text = "---\n" + fm + "---\n" + (BODY if body is None else body)
        skill_md = text.encode("utf-8")
    (skill / "SKILL.md").write_bytes(skill_md)
    for rel, spec in (files or {}).items():
        content, mode = spec if isinstance(spec, tuple) else (spec, None)
        path = skill / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
        if mode is not None:
            os.chmod(path, mode)
    return skill


def script(text: str = "#!/bin/sh\necho ok\n") -> tuple[str, int]:
    """A runnable script file spec (shebang + run bit): the clean baseline for scripts/."""
    return (text, 0o755)


def check(*paths: str | Path) -> list[SkillReport]:
    return validate_paths([Path(p) for p in paths])


def only(reports: list[SkillReport]) -> SkillReport:
    assert len(reports) == 1, [r.path for r in reports]
    return reports[0]


def with_code(report: SkillReport, code: str) -> list[Diagnostic]:
    return [d for d in report.diagnostics if d.code == code]


def codes(report: SkillReport) -> list[str]:
    return [d.code for d in report.diagnostics]


def nest(root: Path, levels: int, name: str = "d") -> Path:
    """``root/d/d/…`` ``levels`` folders deep, made with relative mkdirs (no PATH_MAX issues)."""
    current = root
    for _ in range(levels):
        current = current / name
    current.mkdir(parents=True)
    return current


def touch_many(folder: Path, count: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        os.close(os.open(folder / f"f{i:05d}", os.O_CREAT | os.O_WRONLY, 0o644))


def assert_clean_output(text: str) -> None:
    """Output a person can read: no Python traceback."""
    assert "Traceback (most recent call last)" not in text, text


NOBODY = 65534


def run_cli_as_nobody(args: Iterable[str], cwd: Path) -> dict:
    """Run ``skillctl ARGS`` as uid/gid 65534 in a forked child and return its result.

    Tests run as root, and root reads every file, so permission errors can only be seen by an
    unprivileged process. The interpreter lives under /root (mode 700), so ``exec``-ing python as
    nobody is impossible; instead the already-loaded interpreter forks and drops privileges
    before running the real CLI (every module it needs is imported first).
    """
    from click.testing import CliRunner

    import skillctl.cli.init  # noqa: F401 - imported before dropping privileges
    import skillctl.cli.validate  # noqa: F401
    from skillctl.cli import cli
    import skillctl.skill.validate  # noqa: F401
    import skillctl.versioning  # noqa: F401 - imported lazily by the version rule
    import click._textwrap  # noqa: F401 - click imports it lazily when it formats usage errors
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: never return into pytest
        status = 0
        try:
            os.close(read_fd)
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            os.chdir(cwd)
            result = CliRunner().invoke(cli, list(args))
            payload = {
                "exit_code": result.exit_code,
                "output": result.output,
                "exception": None if result.exception is None or isinstance(result.exception, SystemExit) else repr(result.exception),
                "uid": os.getuid(),
            }
            os.write(write_fd, json.dumps(payload).encode("utf-8"))
        except BaseException as exc:  # report, never raise inside the forked pytest
            os.write(write_fd, json.dumps({"exit_code": -1, "output": "", "exception": repr(exc), "uid": os.getuid()}).encode())
            status = 1
        finally:
            os._exit(status)
    os.close(write_fd)
    data = b""
    with os.fdopen(read_fd, "rb") as fh:
        data = fh.read()
    os.waitpid(pid, 0)
    return json.loads(data)
