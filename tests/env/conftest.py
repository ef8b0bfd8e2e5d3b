"""Fixtures for skill environments: the loopback package index and isolated caches.

The wheels are real (numpy, pandas, PyYAML… as published on PyPI for the agent image's Python),
downloaded once by ``scripts/test.sh`` into ``.cache/test-wheels`` and served here from a real
HTTP index on 127.0.0.1 — tests resolve, hash and install them without leaving the machine.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from package_index import PackageIndex  # noqa: E402
from sandbox_fixtures import on_ci  # noqa: E402

from skillctl.env.target import Target  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
REAL = REPO / "tests" / "data" / "real-skills"
WHEELS = Path(os.environ.get("SKILLCTL_TEST_WHEELS", REPO / ".cache" / "test-wheels"))
# The agent image's interpreter (Debian 12's python3); tests that need Docker probe it instead.
TARGET = Target("3.11.2", "x86_64", "glibc 2.36", "amd64")


def real_skill(owner_repo: str, name: str) -> Path:
    return REAL / owner_repo / "skills" / name


@pytest.fixture(scope="session")
def wheels_dir() -> Path:
    # setuptools: the build backend of the source distributions the --allow-sdist tests make.
    if not any(WHEELS.glob("numpy-*.whl")) or not any(WHEELS.glob("setuptools-*.whl")):
        message = f"no test wheels (or an older set) in {WHEELS}: run scripts/test.sh (it downloads them once: scripts/fetch_test_wheels.py)"
        pytest.fail(message) if on_ci() else pytest.skip(message)
    return WHEELS


@pytest.fixture(scope="session")
def index(wheels_dir):
    with PackageIndex(wheels_dir) as served:
        yield served


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    """A fresh skillctl cache (downloads, resolutions, uv's cache) for this test."""
    path = tmp_path / "cache"
    monkeypatch.setenv("SKILLCTL_CACHE_DIR", str(path))
    for name in ("UV_INDEX_URL", "PIP_INDEX_URL", "SKILLCTL_INDEX_URL"):
        monkeypatch.delenv(name, raising=False)
    return path


@pytest.fixture(scope="session")
def shared_cache(tmp_path_factory) -> Path:
    """One cache for the Docker tests of a session: each wheel is downloaded once."""
    return tmp_path_factory.mktemp("env-cache")


def copy_skill(src: Path, dest_root: Path) -> Path:
    dest = dest_root / src.name
    shutil.copytree(src, dest)
    return dest


@pytest.fixture
def project(tmp_path, index, shared_cache, agent_image):
    """A registry folder and a CLI environment that resolves from the loopback index."""
    env = {
        "SKILLCTL_REGISTRY": str(tmp_path / "reg"),
        "SKILLCTL_CACHE_DIR": str(shared_cache),
        "SKILLCTL_INDEX_URL": index.url,
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "OPENAI_BASE_URL": "", "OPENAI_API_KEY": "", "SKILLCTL_MODEL": "",
    }
    return env


# Packages only these tests make (Debian packages skl-*, sdists marker*, the wheels of
# test_env_hostile_wheels, test_syslibs and test_merge): an environment image holding one is of no use outside its test.
OWN_PACKAGES = ("skl-", "markerpkg==", "markerdep==", "pthmarker==", "shadowpkg==", "sklgomp==", "mergex==", "mergey==")


def remove_images(ids) -> None:
    """Remove these images (a test's own), waiting as long as a busy shared engine needs."""
    import docker.errors

    from skillctl.sandbox.client import docker_client

    patient = docker_client(timeout_s=600)
    try:
        for image_id in ids:
            try:
                patient.images.remove(image_id, force=True)
            except docker.errors.NotFound:
                pass
            except docker.errors.APIError as exc:
                if exc.status_code != 409:
                    raise
                # "being used by running container": another session's image, made meanwhile
                # from the same one-off packages (its tests run now): not ours to remove
    finally:
        patient.close()


@pytest.fixture
def own_env_images(docker_client):
    """Remove, after the test, the environment images it built from one-off packages (and only
    those: other images on the shared engine are left alone). Listed in one call, labels
    included: inspecting each image in turn fails when another session removes one meanwhile."""
    def env_images():  # environment images and the parts they are assembled from
        return (docker_client.api.images(filters={"label": "org.skillctl.env"})
                + docker_client.api.images(filters={"label": "org.skillctl.env.part"}))

    before = {i["Id"] for i in env_images()}
    yield
    remove_images([
        image["Id"] for image in env_images()
        if image["Id"] not in before
        and any(p.startswith(OWN_PACKAGES)
                for p in (image.get("Labels") or {}).get("org.skillctl.env.packages", "").split())
    ])
