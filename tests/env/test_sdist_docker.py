"""--allow-sdist in the real engine: source distributions are built into wheels only inside
throwaway containers with the network off, never on this machine — not even to learn their
dependencies — and the environment imports the wheels built there, offline.

The sdists are made by the test (``sdists.setup_py_sdist``): setup.py files with dynamic
dependencies that leave a marker file on this machine if they ever run here, and record where
they ran into the package they build."""

from __future__ import annotations

import hashlib
import json
import tomllib
import zipfile

import pytest

from .runs import invoke, make_skill, publish, run_outputs, scripted
from .sdists import setup_py_sdist

pytestmark = [pytest.mark.requires_docker, pytest.mark.slow]

SCRIPT = (
    "#!/usr/bin/env python3\n# /// script\n# dependencies = [\"markerpkg\"]\n# ///\n"
    "import socket, markerpkg, markerpkg._built as built\n"
    "try:\n    socket.create_connection(('1.1.1.1', 53), timeout=2); net = 'on'\n"
    "except OSError:\n    net = 'off'\n"
    "print(f'markerpkg value={markerpkg.VALUE} run-network={net}')\n"
    "print(open(built.__file__).read())\n"
)


@pytest.fixture
def sdist_project(project, index, tmp_path, own_env_images):
    """The loopback index also serving markerpkg (an sdist needing markerdep, an sdist needing
    six, a wheel); a cache of its own (the sdists' bytes are new in every test)."""
    marker = tmp_path / "setup-py-ran-on-the-host"
    folder = tmp_path / "sdists"
    folder.mkdir()
    made = [setup_py_sdist(folder, "markerpkg", "1.0", ["markerdep>=2", "six"], marker, "from markerdep import VALUE\n"),
            setup_py_sdist(folder, "markerdep", "2.0", ["six"], marker, "VALUE = 7\n")]
    index.files.update({p.name: p for p in made})
    try:
        yield dict(project, SKILLCTL_CACHE_DIR=str(tmp_path / "cache")), marker, {p.name: p for p in made}
    finally:
        for p in made:
            index.files.pop(p.name, None)


def built_module(cache, sdist_name: str) -> str:
    (wheel,) = cache.glob(f"env/built/*/*/{sdist_name}-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        return zf.read(f"{sdist_name}/_built.py").decode()


def test_allow_sdist_builds_in_a_container_and_never_on_the_host(sdist_project, tmp_path):
    env, marker, sdists = sdist_project
    publish(env, make_skill(tmp_path, "marked", SCRIPT))

    refused = invoke(env, "run", "--skill", "marked", "--model", scripted(tmp_path, ["true"]), "task")
    assert refused.exit_code == 1 and "markerpkg" in refused.stderr and "--allow-sdist" in refused.stderr, refused.output

    result, outputs = run_outputs(env, tmp_path, "--skill", "marked", "--allow-sdist",
                                  commands=["python3 /skills/marked/scripts/run.py"])
    for name in ("markerpkg-1.0.tar.gz", "markerdep-2.0.tar.gz"):  # markerdep found only from markerpkg's wheel
        assert f"building {name} in a throwaway container, network off" in result.stderr
    assert "markerpkg value=7 run-network=off" in outputs, outputs
    # The module the run imported is the one setup.py wrote in the build container.
    record = built_module(tmp_path / "cache", "markerpkg")
    assert "BUILD_UID = 1000\nBUILD_NETWORK = 'off'\nBUILD_DIR = '/tmp/build/" in record
    assert record in outputs
    assert not marker.exists()

    # The lock pins the sdists themselves (the wheels built from them are this machine's).
    (tmp_path / "skills.yaml").write_text("skills:\n  marked: ^1\n")
    lock = tmp_path / "skills.lock"
    made = invoke(env, "lock", "--requirements", str(tmp_path / "skills.yaml"), "--lock", str(lock), "--allow-sdist")
    assert made.exit_code == 0, made.output
    assert "in a throwaway container" not in made.stderr  # built once, reused from the cache
    pylock = (tmp_path / "pylock.skills.toml").read_text()
    assert "file://" not in pylock
    packages = {p["name"]: p for p in tomllib.loads(pylock)["packages"]}
    for name in ("markerpkg", "markerdep"):
        (path,) = [p for n, p in sdists.items() if n.startswith(name + "-")]
        assert packages[name]["sdist"]["hashes"]["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
        assert "wheels" not in packages[name]
    assert "wheels" in packages["six"]

    # Another machine (a fresh cache) rebuilds from the locked, hash-checked sdists — in a container.
    other = dict(env, SKILLCTL_CACHE_DIR=str(tmp_path / "other-cache"))
    rebuilt = invoke(other, "env", "build", "--lock", str(lock), "--force", "--format", "json")
    assert rebuilt.exit_code == 0, rebuilt.output
    assert "building markerpkg-1.0.tar.gz in a throwaway container" in rebuilt.stderr
    assert json.loads(rebuilt.stdout)["image"].startswith("skillctl-env:")
    assert not marker.exists()


def test_a_locked_sdist_whose_bytes_changed_is_refused(sdist_project, tmp_path, index):
    env, marker, sdists = sdist_project
    publish(env, make_skill(tmp_path, "marked", SCRIPT))
    (tmp_path / "skills.yaml").write_text("skills:\n  marked: ^1\n")
    lock = tmp_path / "skills.lock"
    made = invoke(env, "lock", "--requirements", str(tmp_path / "skills.yaml"), "--lock", str(lock), "--allow-sdist")
    assert made.exit_code == 0, made.output
    name = "markerdep-2.0.tar.gz"
    changed = tmp_path / "changed" / name
    changed.parent.mkdir()
    setup_py_sdist(changed.parent, "markerdep", "2.0", ["six"], marker, "VALUE = 666\n")
    index.files[name] = changed
    other = dict(env, SKILLCTL_CACHE_DIR=str(tmp_path / "other-cache"))
    refused = invoke(other, "install", "--frozen", "--requirements", str(tmp_path / "skills.yaml"), "--lock", str(lock),
                     "-o", str(tmp_path / "out"))
    assert refused.exit_code == 1 and f"{name} from" in refused.stderr and "is pinned; refusing it" in refused.stderr
    built = invoke(other, "env", "build", "--lock", str(lock), "--force")
    assert built.exit_code == 1 and "is pinned; refusing it" in built.stderr, built.output
    assert not list((tmp_path / "other-cache").glob("env/built/*/*/markerdep-*.whl"))  # never built
    assert not marker.exists()


@pytest.fixture
def served_sdists(index, tmp_path, monkeypatch, agent_image, docker_client):
    """Add sdists to the loopback index for one test (a fresh cache); (add, target)."""
    from skillctl.env.target import probe_image

    monkeypatch.setenv("SKILLCTL_CACHE_DIR", str(tmp_path / "cache"))
    added: list[str] = []

    def add(*paths):
        for path in paths:
            index.files[path.name] = path
            added.append(path.name)

    try:
        yield add, probe_image(docker_client, agent_image)
    finally:
        for name in added:
            index.files.pop(name, None)


def test_a_build_that_fails_in_its_container_is_one_clear_error(served_sdists, index, tmp_path, docker_client,
                                                                  agent_image):
    from skillctl.env.declare import Declarations, Declared
    from skillctl.env.prepare import resolve_environment
    from skillctl.errors import EnvError

    add, target = served_sdists
    marker = tmp_path / "setup-py-ran-on-the-host"
    add(setup_py_sdist(tmp_path, "brokenpkg", "1.0", [], marker, fail="this package does not build"))
    decl = Declarations((Declared("brokenpkg", "a-skill", "scripts/x.py (PEP 723)"),))
    with pytest.raises(EnvError, match=r"building brokenpkg-1.0.tar.gz failed in its container: .*this package does not build"):
        resolve_environment(decl, target, index=index.url, allow_sdist=True, base_image=agent_image, client=docker_client)
    assert not marker.exists()


def test_the_number_of_sdists_built_for_one_environment_is_bounded(served_sdists, index, tmp_path, docker_client,
                                                                    agent_image):
    from skillctl.env.sdist import SdistBuilder, resolve_with_sdists
    from skillctl.errors import EnvError

    add, target = served_sdists
    marker = tmp_path / "setup-py-ran-on-the-host"
    add(setup_py_sdist(tmp_path, "markerpkg", "1.0", ["markerdep>=2"], marker),
        setup_py_sdist(tmp_path, "markerdep", "2.0", [], marker))
    builder = SdistBuilder(docker_client, agent_image, target, index.url)
    (tmp_path / "links").mkdir()
    with pytest.raises(EnvError, match=r"more than 1 source distributions would have to be built \(markerdep==2.0 next\)"):
        resolve_with_sdists(["markerpkg"], target, index.url, builder, tmp_path / "links", lambda _line: None,
                            max_builds=1)
    assert not marker.exists()


def test_a_build_that_fills_its_space_names_the_setting_and_the_files_go_in_streamed(served_sdists, index, tmp_path,
                                                                                      docker_client, agent_image,
                                                                                      monkeypatch):
    """The build container's /tmp is SKILLCTL_SDIST_SPACE big: 64m holds uv, setuptools and the
    sdist (streamed in from a tar on disk), not the 80 MB this setup.py writes."""
    from skillctl.env.declare import Declarations, Declared
    from skillctl.env.prepare import resolve_environment
    from skillctl.env.sdist import build_space
    from skillctl.errors import EnvError

    add, target = served_sdists
    marker = tmp_path / "setup-py-ran-on-the-host"
    add(big_sdist(tmp_path, marker))
    decl = Declarations((Declared("bigbuild", "a-skill", "scripts/x.py (PEP 723)"),))
    monkeypatch.setenv("SKILLCTL_SDIST_SPACE", "64m")
    with pytest.raises(EnvError) as err:
        resolve_environment(decl, target, index=index.url, allow_sdist=True, base_image=agent_image, client=docker_client)
    assert str(err.value).startswith("building bigbuild-1.0.tar.gz ran out of space: its container's /tmp holds 64m")
    assert "SKILLCTL_SDIST_SPACE=128m" in str(err.value) and "\n" not in str(err.value)
    assert not marker.exists()
    monkeypatch.setenv("SKILLCTL_SDIST_SPACE", "lots")
    with pytest.raises(EnvError, match=r"SKILLCTL_SDIST_SPACE='lots' is not a size; write e.g. 4g or 512m"):
        build_space()
    monkeypatch.delenv("SKILLCTL_SDIST_SPACE")
    assert build_space() == "2g"


def big_sdist(folder, marker):
    """A setup.py sdist whose build writes 80 MB beside itself (in the container's /tmp)."""
    from .sdists import _write_sdist

    base = "bigbuild-1.0"
    setup = (f"import pathlib\ntry:\n    pathlib.Path({str(marker)!r}).write_text('ran')\nexcept OSError:\n    pass\n"
             "with open('filler.bin', 'wb') as fh:\n    for _ in range(80):\n        fh.write(b'x' * (1 << 20))\n"
             "from setuptools import setup\nsetup(name='bigbuild', version='1.0', packages=['bigbuild'])\n")
    return _write_sdist(folder / f"{base}.tar.gz", {
        f"{base}/setup.py": setup, f"{base}/bigbuild/__init__.py": "VALUE = 1\n",
        f"{base}/PKG-INFO": "Metadata-Version: 1.0\nName: bigbuild\nVersion: 1.0\n",
    })
