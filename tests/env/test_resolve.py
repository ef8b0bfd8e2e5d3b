"""Resolution with uv against a loopback index: real wheels, real hashes, no PyPI."""

from __future__ import annotations

import hashlib
import io
import tarfile

import pytest

from package_index import PackageIndex
from skillctl.env.declare import PROJECT, Declarations, Declared
from skillctl.env.files import Wanted, ensure_files
from skillctl.env.resolve import resolve
from skillctl.errors import EnvError, EnvIntegrityError

from .conftest import TARGET


def decl(*items: tuple[str, str]) -> Declarations:
    return Declarations(tuple(Declared(req, owner, f"{owner}/scripts/x.py (PEP 723)") for req, owner in items))


def test_numpy_and_pyyaml_resolve_to_one_wheel_each_with_the_served_sha256(index, cache):
    res = resolve(decl(("numpy", "a"), ("pyyaml", "b")), TARGET, index=index.url)
    by_name = {f.name: f for f in res.files}
    assert set(by_name) == {"numpy", "pyyaml"}
    for f in res.files:
        assert f.kind == "wheel" and "cp311" in f.filename and "x86_64" in f.filename
        assert f.url.startswith(index.url.removesuffix("/simple"))
        assert f.sha256 == hashlib.sha256(index.files[f.filename].read_bytes()).hexdigest()
    assert 'lock-version = "1.0"' in res.pylock  # PEP 751, as uv writes it


def test_pure_python_dependencies_come_along(index, cache):
    res = resolve(decl(("python-dateutil", "a")), TARGET, index=index.url)
    names = [f.name for f in res.files]
    assert names[0] == "python-dateutil" and len(names) > 1  # its dependencies, resolved with it
    assert all(f.filename.endswith("-none-any.whl") for f in res.files)


def test_a_second_resolution_is_served_from_the_cache_without_the_index(index, cache):
    resolve(decl(("pyyaml", "a")), TARGET, index=index.url)
    before = len(index.requests)
    again = resolve(decl(("pyyaml", "a")), TARGET, index=index.url)
    assert len(index.requests) == before and [f.name for f in again.files] == ["pyyaml"]


def test_markers_that_do_not_hold_in_the_container_are_left_out(index, cache):
    res = resolve(decl(("pyyaml", "a"), ('pywin32; sys_platform == "win32"', "a")), TARGET, index=index.url)
    assert [f.name for f in res.files] == ["pyyaml"]


def test_index_url_is_read_from_uv_and_pip_variables(index, cache, monkeypatch):
    monkeypatch.setenv("PIP_INDEX_URL", index.url)
    assert resolve(decl(("six", "a")), TARGET).index_url == index.url


def test_conflicting_skills_are_named_with_both_requirements(index, cache):
    with pytest.raises(EnvError) as err:
        resolve(decl(("six==1.16.0", "old-skill"), ("pyyaml", "other"), ("six>=1.17", "new-skill")), TARGET,
                index=index.url)
    text = str(err.value)
    assert "conflict between old-skill and new-skill" in text
    assert "old-skill requires 'six==1.16.0'" in text and "new-skill requires 'six>=1.17'" in text


def test_a_conflict_with_the_project_names_the_project(index, cache):
    with pytest.raises(EnvError, match=f"conflict between {PROJECT} and skill-a"):
        resolve(decl(("six<1.17", PROJECT), ("six>=1.17", "skill-a")), TARGET, index=index.url)


def test_requires_python_the_image_cannot_meet_is_refused_naming_skill_and_script(index, cache):
    pins = Declarations((Declared("pyyaml", "skill-writer", "scripts/quick_validate.py (PEP 723)"),),
                        (Declared(">=3.12", "skill-writer", "scripts/quick_validate.py (PEP 723)"),))
    with pytest.raises(EnvError, match=r"skill-writer: scripts/quick_validate.py \(PEP 723\) requires Python >=3.12, "
                       r"but the agent image has Python 3.11.2"):
        resolve(pins, TARGET, index=index.url)


def make_sdist(folder, name="onlysdist", version="1.0"):
    """A real source distribution with static metadata and a flit_core build backend."""
    base = f"{name}-{version}"
    files = {
        f"{base}/pyproject.toml": (
            f'[build-system]\nrequires = ["flit_core>=3.2,<4"]\nbuild-backend = "flit_core.buildapi"\n\n'
            f'[project]\nname = "{name}"\nversion = "{version}"\ndescription = "test"\n'
        ),
        f"{base}/{name}/__init__.py": 'ANSWER = 42\n',
        f"{base}/PKG-INFO": f"Metadata-Version: 2.2\nName: {name}\nVersion: {version}\nSummary: test\n",
    }
    path = folder / f"{base}.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        for member, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(member)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


@pytest.fixture
def sdist_index(wheels_dir, tmp_path):
    with PackageIndex(wheels_dir) as served:
        sdist = make_sdist(tmp_path)
        served.files[sdist.name] = sdist
        yield served


def test_an_sdist_only_package_is_refused_by_default(sdist_index, cache):
    with pytest.raises(EnvError, match="no wheel for Python 3.11.2.*--allow-sdist"):
        resolve(decl(("onlysdist", "a")), TARGET, index=sdist_index.url)


def test_allow_sdist_picks_the_sdist_without_building_it(sdist_index, cache, tmp_path):
    res = resolve(decl(("onlysdist", "a")), TARGET, index=sdist_index.url, allow_sdist=True)
    assert [(f.name, f.kind) for f in res.files] == [("onlysdist", "sdist")]
    assert not list(cache.rglob("*.whl"))  # nothing was built on this machine


def test_downloads_are_checked_and_a_changed_file_is_refused(index, cache, tmp_path):
    res = resolve(decl(("six==1.16.0", "a")), TARGET, index=index.url)
    (six,) = res.files
    want = Wanted(six.filename, six.url, six.sha256, six.size)
    original = index.files[six.filename]
    changed = tmp_path / six.filename
    data = bytearray(original.read_bytes())
    data[len(data) // 2] ^= 0xFF
    changed.write_bytes(bytes(data))
    index.files[six.filename] = changed
    try:
        with pytest.raises(EnvIntegrityError, match="has sha256 .* is pinned; refusing it"):
            ensure_files([want])
    finally:
        index.files[six.filename] = original
    (path,) = ensure_files([want])
    assert path.read_bytes() == original.read_bytes()
    path.write_bytes(b"tampered on disk")
    with pytest.raises(EnvIntegrityError, match="cached .* delete it and retry"):
        ensure_files([want])
