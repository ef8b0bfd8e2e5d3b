"""An installed wheel is a complete skillctl: it carries the agent image's build context and
builds (or finds) the same image as the checkout, from a folder that is not the checkout."""

from __future__ import annotations

import json
import os
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
def wheel(tmp_path_factory) -> Path:
    """A wheel built from this checkout offline (no build isolation: nothing is downloaded)."""
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
    return whl


def test_the_wheel_carries_the_image_build_context(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for rel in (p.relative_to(REPO / "container").as_posix() for p in (REPO / "container").rglob("*") if p.is_file()):
        assert f"skillctl/_container/{rel}" in names, rel
    # Shipped data the package reads at run time.
    assert "skillctl/skill/schemas/frontmatter.schema.json" in names
    assert "skillctl/models/script.schema.json" in names


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
    res = _run([str(vpy), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)], cwd=tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr

    env = {k: v for k, v in os.environ.items() if k not in ("SKILLCTL_CONTAINER_DIR", "PYTHONPATH")}
    env["PATH"] = f"{venv / 'bin'}:{env.get('PATH', '')}"
    where = _run([str(vpy), "-c", "import skillctl.sandbox.image as i; print(i.__file__); print(i.container_dir())"],
                 cwd=tmp_path, env=env)
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
