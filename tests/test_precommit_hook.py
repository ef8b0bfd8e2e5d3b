"""The ``skillctl-validate`` hook of ``.pre-commit-hooks.yaml``, run by the real ``pre-commit``
in a temporary git repository, exactly as a project that lists this repository as a hook source.

No network: the hook source is a local git repository holding this checkout's package, and
pip installs it with ``PIP_NO_INDEX`` (skillctl only; its dependencies, which this test cannot
download, are shown to the hook's environment with a ``.pth`` file pointing at the test's own
environment)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.slow

GOOD = '---\nname: good\ndescription: A good skill.\nmetadata:\n  version: "1.0.0"\n---\n\nRun it:\n\n```\nscripts/run.sh\n```\n'
# a Python script with an undeclared import: the installed hook needs its data files (import map)
TOOL = "#!/usr/bin/env python3\n# /// script\n# dependencies = [\"pyyaml\"]\n# ///\nimport yaml\n"
BAD = "---\nname: bad\ndescription: A bad skill.\nversion: 1.0.0\n---\n\n# Bad\n"


def git(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    e = dict(os.environ)
    e.update(
        PRE_COMMIT_HOME=str(tmp_path / "pre-commit-home"),
        PIP_NO_INDEX="1",
        PIP_NO_DEPS="1",
        PIP_NO_BUILD_ISOLATION="false",  # pip's inverted flag: build with the hook env's setuptools
        PIP_FIND_LINKS="",
        GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.org", GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.org",
    )
    return e


def hook_source(tmp_path: Path) -> tuple[Path, str]:
    """A git repository with this checkout's package and hook manifest, committed."""
    src = tmp_path / "hook-src"
    src.mkdir()
    # what `pip install .` of a clone reads: the packaging files, the package, the image context
    for name in ("pyproject.toml", "setup.py", "README.md", ".pre-commit-hooks.yaml"):
        shutil.copy2(ROOT / name, src / name)
    for folder in ("skillctl", "container"):
        shutil.copytree(ROOT / folder, src / folder, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    git(src, "init", "-q")
    git(src, "add", "-A")
    git(src, "-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-qm", "hook source")
    return src, git(src, "rev-parse", "HEAD").stdout.strip()


def project(tmp_path: Path, src: Path, rev: str, args: list[str]) -> Path:
    proj = tmp_path / "project"
    (proj / "skills" / "good" / "scripts").mkdir(parents=True)
    (proj / "skills" / "good" / "SKILL.md").write_text(GOOD)
    run_sh = proj / "skills" / "good" / "scripts" / "run.sh"
    run_sh.write_text("#!/bin/sh\necho ok\n")
    run_sh.chmod(0o755)
    tool = proj / "skills" / "good" / "scripts" / "tool.py"
    tool.write_text(TOOL)
    tool.chmod(0o755)
    (proj / "notes.txt").write_text("not a skill\n")
    (proj / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {src}\n    rev: {rev}\n    hooks:\n      - id: skillctl-validate\n        args: {args}\n"
    )
    git(proj, "init", "-q")
    return proj


def pre_commit(proj: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pre_commit", *args], cwd=proj, env=env, capture_output=True, text=True)


def install(proj: Path, env: dict[str, str]) -> None:
    done = pre_commit(proj, env, "install-hooks")
    assert done.returncode == 0, done.stdout + done.stderr
    [site] = list(Path(env["PRE_COMMIT_HOME"]).glob("repo*/py_env-*/lib/python*/site-packages"))
    assert (site / "skillctl").is_dir()  # the hook's own copy of skillctl, installed by pre-commit
    (site / "test-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")


def test_hook_checks_the_skills_holding_the_staged_files(tmp_path: Path, env: dict[str, str]) -> None:
    src, rev = hook_source(tmp_path)
    proj = project(tmp_path, src, rev, ["--strict"])
    install(proj, env)
    git(proj, "add", "skills/good", "notes.txt", ".pre-commit-config.yaml")
    ok = pre_commit(proj, env, "run")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "validate agent skills" in ok.stdout and "Passed" in ok.stdout

    # a commit adding a skill with an unknown field is refused by the installed git hook
    assert pre_commit(proj, env, "install").returncode == 0
    (proj / "skills" / "bad").mkdir()
    (proj / "skills" / "bad" / "SKILL.md").write_text(BAD)
    git(proj, "add", "-A")
    refused = subprocess.run(["git", "commit", "-qm", "add skills"], cwd=proj, env=env, capture_output=True, text=True)
    assert refused.returncode != 0
    assert "skills/bad/SKILL.md:4:1: SK161 error unknown field 'version'" in refused.stdout + refused.stderr

    # skillctl validate --fix moves it where the spec keeps it; then the commit goes through
    skillctl = str(Path(sys.executable).with_name("skillctl"))
    fixed = subprocess.run([skillctl, "validate", "--fix", "skills"], cwd=proj, capture_output=True, text=True)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    git(proj, "add", "-A")
    committed = subprocess.run(["git", "commit", "-qm", "add skills"], cwd=proj, env=env, capture_output=True, text=True)
    assert committed.returncode == 0, committed.stdout + committed.stderr


def test_a_change_to_a_script_rechecks_its_skill(tmp_path: Path, env: dict[str, str]) -> None:
    src, rev = hook_source(tmp_path)
    proj = project(tmp_path, src, rev, ["--strict"])
    install(proj, env)
    git(proj, "add", "-A")
    assert pre_commit(proj, env, "run").returncode == 0
    git(proj, "-c", "core.hooksPath=/dev/null", "commit", "-qm", "initial")
    run_sh = proj / "skills" / "good" / "scripts" / "run.sh"
    run_sh.chmod(0o644)  # SKILL.md runs it directly: now it cannot be
    git(proj, "add", "skills/good/scripts/run.sh")
    failed = pre_commit(proj, env, "run")
    assert failed.returncode == 1
    assert "skills/good/scripts/run.sh:0:0: SK222 warning scripts/run.sh is run directly (SKILL.md:11)" in failed.stdout
    # the hook's own install carries its data (the import-name map of the environments check)
    (proj / "skills" / "good" / "scripts" / "tool.py").write_text("#!/usr/bin/env python3\nimport yaml\n")
    git(proj, "add", "skills/good/scripts/tool.py")
    undeclared = pre_commit(proj, env, "run")
    assert "skills/good/scripts/tool.py:2:1: SK251 warning imports 'yaml'" in undeclared.stdout
    assert "declare 'PyYAML'" in undeclared.stdout
