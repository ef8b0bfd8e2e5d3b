"""An installed wheel is a complete skillctl: it carries the agent image's build context and
every data file the code opens, builds (or finds) the same image as the checkout from a folder
that is not the checkout, and is built without a warning."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from skillctl.sandbox.image import recipe

REPO = Path(__file__).resolve().parents[1]


def _run(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600, check=False)


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, str]:
    """A wheel built from this checkout offline (no build isolation: nothing is downloaded), and
    what the build printed."""
    out = tmp_path_factory.mktemp("wheel")
    build = tmp_path_factory.mktemp("build")
    # Build from a copy: setuptools writes build/ and *.egg-info into the source folder.
    src = build / "src"
    files = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                           check=True, capture_output=True).stdout.decode().split("\0")
    for rel in filter(None, files):
        target = src / rel
        source = REPO / rel
        if not source.is_file():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(source.read_bytes())
        os.chmod(target, source.stat().st_mode & 0o777)
    res = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
                "-q", "-w", str(out), str(src)], cwd=build)
    assert res.returncode == 0, res.stdout + res.stderr
    [whl] = out.glob("skillctl-*.whl")
    return whl, res.stdout + res.stderr


@pytest.fixture(scope="module")
def wheel(built) -> Path:
    return built[0]


def test_the_build_prints_no_warning(built):
    # pip shows the backend's warnings even with -q: a deprecated license table, a data folder
    # missing from `packages` (it shipped only by a fallback setuptools means to remove).
    _, output = built
    assert not re.search(r"Warning\b|WARNING|[Dd]eprecat", output), output


def test_the_wheel_carries_the_image_build_context(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for rel in (p.relative_to(REPO / "container").as_posix() for p in (REPO / "container").rglob("*") if p.is_file()):
        assert f"skillctl/_container/{rel}" in names, rel


def _constants(tree: ast.Module) -> dict[str, str]:
    """The module's top-level ``NAME = "text"`` assignments."""
    found = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            found.update({t.id: node.value.value for t in node.targets if isinstance(t, ast.Name)})
    return found


def _text(node: ast.expr, constants: dict[str, str], package: str) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name):
        return package if node.id == "__package__" else constants.get(node.id)
    return None


def opened_data_files() -> set[str]:
    """Every file the package's code opens beside its modules, as a path in the wheel:
    ``resources.files("pkg").joinpath("a", "b")``, ``resources.files(__package__).joinpath(NAME)``
    and ``Path(__file__).with_name("x")`` (names may be module-level constants)."""
    found: set[str] = set()
    for source in (REPO / "skillctl").rglob("*.py"):
        module = source.relative_to(REPO).with_suffix("").parts
        package = ".".join(module[:-1] if module[-1] != "__init__" else module[:-1])
        tree = ast.parse(source.read_text("utf-8"))
        constants = _constants(tree)
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args):
                continue
            parts = [_text(a, constants, package) for a in node.args]
            target = node.func.value
            if node.func.attr == "joinpath" and isinstance(target, ast.Call) and isinstance(target.func, ast.Attribute) \
                    and target.func.attr == "files" and target.args:
                base = _text(target.args[0], constants, package)
                assert base is not None and None not in parts, f"{source}:{node.lineno}: a resource name the test cannot read"
                found.add("/".join([*base.split("."), *parts]))  # type: ignore[list-item]
            elif node.func.attr == "with_name" and isinstance(target, ast.Call) and ast.unparse(target) == "Path(__file__)":
                assert None not in parts, f"{source}:{node.lineno}: a file name the test cannot read"
                found.add("/".join([*module[:-1], *parts]))  # type: ignore[list-item]
    return found


def test_the_wheel_holds_every_data_file_the_code_opens(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    opened = opened_data_files()
    # The scan must see the known readers (schemas, rules, the agents table, the import map):
    # one that matched nothing would pass this test with an empty set.
    assert {"skillctl/egress/schemas/network-policy.schema.json", "skillctl/many/schemas/task.schema.json",
            "skillctl/env/import_names.json", "skillctl/project/agents.json"} <= opened, sorted(opened)
    assert sorted(opened - names) == []
    for rel in opened:
        assert (REPO / rel).is_file(), f"the code opens {rel}, which is not in the checkout"
    # and every data file kept beside the modules ships, opened by a literal name or not
    tracked = subprocess.run(["git", "-C", str(REPO), "ls-files", "skillctl"], check=True, capture_output=True,
                             text=True).stdout.split()
    assert sorted(f for f in tracked if not f.endswith(".py") and f not in names) == []


@pytest.mark.requires_docker
@pytest.mark.slow
def test_an_installed_wheel_outside_the_checkout_finds_its_image(wheel, tmp_path, agent_image):
    venv = tmp_path / "venv"
    res = _run([sys.executable, "-m", "venv", str(venv)], cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    vpy = venv / "bin" / "python"
    # Dependencies come from this test environment's site-packages (read through a .pth, which
    # does not activate the checkout's editable install); skillctl itself only from the wheel.
    vsite = Path(_run([str(vpy), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], cwd=tmp_path).stdout.strip())
    (vsite / "zz_test_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    env = {k: v for k, v in os.environ.items() if k not in ("SKILLCTL_CONTAINER_DIR", "PYTHONPATH")}
    env["PATH"] = f"{venv / 'bin'}:{env.get('PATH', '')}"
    # Without PYTHONPATH here too: a checkout on it that holds skillctl.egg-info (an editable
    # install made it) made pip find skillctl "already satisfied" and install nothing.
    res = _run([str(vpy), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)], cwd=tmp_path, env=env)
    assert res.returncode == 0, res.stdout + res.stderr

    where = _run([str(vpy), "-c", "import skillctl.sandbox.image as i; print(i.__file__); print(i.container_dir())"],
                 cwd=tmp_path, env=env)
    assert where.returncode == 0, where.stderr
    module_file, context = where.stdout.split()
    assert Path(module_file).is_relative_to(venv), where.stdout
    assert Path(context) == Path(module_file).parents[1] / "_container"

    status = _run([str(venv / "bin" / "skillctl"), "image", "status", "--format", "json"], cwd=tmp_path, env=env)
    assert status.returncode == 0, status.stderr
    # Same recipe as the checkout: the wheel's build context is byte-identical, so the image the
    # test session built is the installed wheel's image too — up to date, nothing rebuilt.
    assert json.loads(status.stdout)["recipe"] == recipe().hash
    assert json.loads(status.stdout)["built"] is True
    build = _run([str(venv / "bin" / "skillctl"), "image", "build", "--format", "json"], cwd=tmp_path, env=env)
    assert build.returncode == 0, build.stderr
    assert json.loads(build.stdout)["image"] == agent_image
    assert "is up to date" in build.stderr and "debootstrap" not in build.stderr
