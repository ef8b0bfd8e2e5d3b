"""A registry folder that is not there: every command that reads it refuses in one line naming
the path, where it came from (--registry, SKILLCTL_REGISTRY, the default, --from) and what to do,
and creates nothing. Only publish, copy's target and `registry init` make a registry, and say so.

Before this, `skillctl list --registry /tmp/does-not-exist` printed "no skills", exited 0 and
left registry.json, index.sqlite and blobs/ there; show, versions and install did the same."""

from __future__ import annotations

from pathlib import Path

import pytest

from registry.helpers import run_cli, write_skill
from registry_cli import as_json, error_line, isolated, run  # noqa: F401 - isolated: autouse fixture

# Every command that only reads a registry (or changes what is in one), with what it needs
# besides; "out" is a folder it would write.
READS = [
    ("list",),
    ("show", "demo"),
    ("versions", "demo"),
    ("pull", "demo", "-o", "out"),
    ("lock",),
    ("install", "-o", "out"),
    ("install", "--frozen", "-o", "out"),
    ("export", "demo", "-o", "out"),
    ("catalog", "demo"),
    ("run", "--skill", "demo", "--model", "script:m.yaml", "--output", "out", "task"),
    ("env", "show", "demo", "--no-resolve"),
    ("verify", "demo", "--key", "team.pub"),
    ("sign", "demo@1.0.0", "--key", "team.key"),
    ("yank", "demo@1.0.0"),
    ("unyank", "demo@1.0.0"),
    ("registry", "remove", "demo@1.0.0", "--yes"),
    ("registry", "verify"),
    ("registry", "gc"),
    ("registry", "rebuild-index"),
    ("site", "build", "out"),
]
SERVE = ("serve", "--public-read", "--port", "0", "--no-access-log")


@pytest.fixture
def project(isolated: Path) -> Path:
    """What the commands need besides a registry: a skills.yaml and its lock (written against
    another registry, as a teammate's would be), a key pair, a model script."""
    (isolated / "skills.yaml").write_text("skills:\n  demo: ^1\n")
    elsewhere = isolated / "elsewhere"
    run("publish", write_skill(isolated / "src", "demo", "1.0.0"), "--registry", elsewhere)
    run("lock", "--registry", elsewhere)
    run("key", "generate", "team")
    (isolated / "m.yaml").write_text("steps:\n  - answer: done\n")
    return isolated


def _nothing_made(root: Path, missing: Path) -> None:
    assert not missing.exists() and not (root / "out").exists() and not (root / "home").exists()


@pytest.mark.parametrize("args", READS, ids=lambda a: " ".join(a[:2]))
def test_a_read_of_a_registry_that_is_not_there_is_one_line_and_creates_nothing(project: Path, args: tuple[str, ...]) -> None:
    missing = project / "does-not-exist"
    lock_before = (project / "skills.lock").read_bytes()
    line = error_line(run(*args, "--registry", missing, ok=False))
    assert f"no registry at {missing} (from --registry)" in line
    assert f"skillctl publish SKILL_DIR --registry {missing}" in line  # what to do
    _nothing_made(project, missing)
    assert (project / "skills.lock").read_bytes() == lock_before


def test_serve_refuses_a_registry_that_is_not_there_at_start_up(isolated: Path) -> None:
    # a child process with a deadline: a server that started on a new empty registry would not return
    done = run_cli([*SERVE, "--registry", str(isolated / "typo")], cwd=isolated, timeout=120)
    assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
    assert f"no registry at {isolated / 'typo'} (from --registry)" in done.stderr
    assert f"skillctl registry init --registry {isolated / 'typo'}" in done.stderr
    assert not (isolated / "typo").exists()


def test_the_message_names_skillctl_registry_when_the_path_came_from_it(isolated: Path) -> None:
    line = error_line(run("list", ok=False))
    assert f"no registry at {isolated / 'registry'} (from SKILLCTL_REGISTRY)" in line
    assert "(skillctl publish SKILL_DIR)" in line  # publish reads the variable too: nothing to add
    assert not (isolated / "registry").exists()


def test_a_missing_default_registry_is_the_same_one_line(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SKILLCTL_REGISTRY")
    default = isolated / "home" / "data" / "skillctl" / "registry"  # XDG_DATA_HOME/skillctl/registry
    (isolated / "skills.yaml").write_text("skills:\n  demo: ^1\n")  # install asks the registry for the project's skills
    for args in (("list",), ("show", "demo"), ("install", "-o", "out")):
        line = error_line(run(*args, ok=False))
        assert f"no registry at {default} (the default registry, in your user data folder" in line, line
    assert not (isolated / "home").exists()
    # publish makes the default registry, and says so
    r = run("publish", write_skill(isolated / "src", "demo", "1.0.0"))
    assert f"created registry at {default}" in r.stderr
    assert [s["name"] for s in as_json(run("list", "--format", "json"))] == ["demo"]


def test_copy_from_a_registry_that_is_not_there_creates_neither_side(isolated: Path) -> None:
    line = error_line(run("copy", "demo", "--from", isolated / "nowhere", "--to", isolated / "target", ok=False))
    assert f"no registry at {isolated / 'nowhere'} (from --from)" in line and "name an existing registry with --from" in line
    assert not (isolated / "nowhere").exists() and not (isolated / "target").exists()


def test_copy_creates_its_target_and_says_so(isolated: Path) -> None:
    run("publish", write_skill(isolated / "src", "demo", "1.0.0"), "--registry", isolated / "source")
    r = run("copy", "demo", "--from", isolated / "source", "--to", isolated / "target")
    assert f"created registry at {isolated / 'target'}" in r.stderr
    assert [s["name"] for s in as_json(run("list", "--registry", isolated / "target", "--format", "json"))] == ["demo"]


def test_audit_of_a_name_without_a_registry_reports_it_with_the_other_targets(isolated: Path) -> None:
    (isolated / "empty").mkdir()
    r = run("audit", "empty", "demo", ok=False)
    errors = r.stderr.splitlines()
    assert errors[0].startswith("empty: no skills found")
    assert errors[1].startswith("demo: not a file or folder here, and not auditable from the registry: no registry at")
    assert not (isolated / "registry").exists()


def test_publish_creates_a_registry_once_and_says_so(isolated: Path) -> None:
    folder = write_skill(isolated / "src", "demo", "1.0.0")
    first = run("publish", folder, "--registry", isolated / "new")
    assert f"created registry at {isolated / 'new'}" in first.stderr
    assert (isolated / "new" / "registry.json").is_file()
    second = run("publish", folder, "--registry", isolated / "new")
    assert "created registry" not in second.stderr and "unchanged" in second.stdout


def test_publish_that_refuses_everything_creates_no_registry(isolated: Path) -> None:
    unversioned = write_skill(isolated / "src", "demo", None)
    run("publish", unversioned, ok=False)
    run("publish", unversioned, write_skill(isolated / "src", "other", None), ok=False)
    assert not (isolated / "registry").exists()


def test_registry_init_makes_an_empty_registry_for_serve_and_leaves_one_alone(isolated: Path) -> None:
    made = run("registry", "init")
    assert f"created registry at {isolated / 'registry'}" in made.stderr
    assert run("list").stdout == f"no skills in {isolated / 'registry'}\n"
    assert as_json(run("registry", "init", "--format", "json")) == {"registry": str(isolated / "registry"), "created": False}
    assert "is a registry already" in run("registry", "init").stdout
    assert "only a folder registry is made by skillctl" in error_line(run("registry", "init", "--registry", "oci://127.0.0.1:9/x", ok=False))
