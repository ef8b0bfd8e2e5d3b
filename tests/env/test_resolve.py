"""Resolution with uv against a loopback index: real wheels, real hashes, no PyPI."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import re
import tarfile
import tomllib

import pytest

from package_index import PackageIndex
from packaging.specifiers import SpecifierSet

from skillctl.env.declare import PROJECT, Declarations, Declared
from skillctl.env.files import Wanted, ensure_files
from skillctl.env.resolve import PackageFile, check_requires_python, parse_pylock, resolve
from skillctl.env import simple
from skillctl.env.sdist import SdistBuilder, dump_toml, pylock_with_sdists, wheel_from_output
from skillctl.env.simple import choose_sdist
from skillctl.errors import EnvError, EnvIntegrityError

from .conftest import TARGET
from .sdists import flit_sdist, setup_py_sdist


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


@pytest.fixture
def sdist_index(wheels_dir, tmp_path):
    with PackageIndex(wheels_dir) as served:
        sdist = flit_sdist(tmp_path)
        served.files[sdist.name] = sdist
        yield served


def test_an_sdist_only_package_is_refused_by_default(sdist_index, cache):
    with pytest.raises(EnvError, match="no wheel for Python 3.11.2.*--allow-sdist"):
        resolve(decl(("onlysdist", "a")), TARGET, index=sdist_index.url)


@pytest.fixture
def setup_py_index(wheels_dir, tmp_path):
    """The index with a package whose dependencies only its setup.py knows."""
    marker = tmp_path / "setup-py-ran-on-the-host"
    folder = tmp_path / "sdists"
    folder.mkdir()
    sdist = setup_py_sdist(folder, "markerpkg", "1.0", ["six"], marker)
    with PackageIndex(wheels_dir) as served:
        served.files[sdist.name] = sdist
        yield served, marker


def test_a_setup_py_sdist_is_refused_by_default_and_never_run(setup_py_index, cache):
    served, marker = setup_py_index
    with pytest.raises(EnvError, match="no wheel for Python 3.11.2.*markerpkg.*--allow-sdist"):
        resolve(decl(("markerpkg", "a")), TARGET, index=served.url)
    assert not marker.exists()


def test_allow_sdist_never_lets_the_resolver_build_on_the_host(setup_py_index, cache):
    """uv resolves with building disabled even with --allow-sdist: learning this sdist's
    dependencies means running its setup.py, which only a build container may do."""
    served, marker = setup_py_index
    with pytest.raises(EnvError, match="markerpkg==1.0 has only a source distribution; building it needs the agent image"):
        resolve(decl(("markerpkg", "a")), TARGET, index=served.url, allow_sdist=True)
    assert not marker.exists()
    assert not list(cache.rglob("*.whl"))  # nothing was built on this machine


@pytest.fixture
def versions_index(tmp_path):
    """One project with finals, a pre-release, a yanked and a Python-3.12-only release."""
    folder = tmp_path / "versions"
    folder.mkdir()
    with PackageIndex() as served:
        for version in ("1.0", "2.0", "2.5", "2.7", "3.0rc1"):
            path = flit_sdist(folder, "multi", version)
            served.files[path.name] = path
        served.attributes["multi-2.5.tar.gz"] = {"data-yanked": "broken"}
        served.attributes["multi-2.7.tar.gz"] = {"data-requires-python": ">=3.12"}
        yield served


@pytest.mark.parametrize(("wanted", "chosen"), [
    ("", "2.0"),  # newest final that is neither yanked nor too new for Python 3.11
    ("<1.5", "1.0"),
    (">=3.0rc1", "3.0rc1"),  # a pre-release only when nothing else fits
    ("==2.0", "2.0"),
])
def test_the_sdist_to_build_is_the_newest_fitting_release(versions_index, wanted, chosen):
    sdist = choose_sdist(versions_index.url, "Multi", SpecifierSet(wanted), TARGET)
    assert (sdist.name, sdist.version, sdist.kind) == ("multi", chosen, "sdist")
    assert sdist.filename == f"multi-{chosen}.tar.gz" and sdist.url.endswith(f"/files/multi-{chosen}.tar.gz")
    assert sdist.sha256 == hashlib.sha256(versions_index.files[sdist.filename].read_bytes()).hexdigest()


def test_no_fitting_sdist_is_a_clear_error(versions_index):
    with pytest.raises(EnvError, match=r"multi has no usable wheel and no source distribution \(.tar.gz\) matching "
                       r"'>=4' for Python 3.11.2"):
        choose_sdist(versions_index.url, "multi", SpecifierSet(">=4"), TARGET)
    with pytest.raises(EnvError, match="has no page for nothing-here"):
        choose_sdist(versions_index.url, "nothing-here", SpecifierSet(), TARGET)


def test_an_sdist_the_index_lists_without_a_hash_or_on_an_oversized_page_is_refused(versions_index, monkeypatch):
    versions_index.unhashed.add("multi-2.0.tar.gz")
    with pytest.raises(EnvError, match="lists multi-2.0.tar.gz without a sha256; refusing to download an unpinned file"):
        choose_sdist(versions_index.url, "multi", SpecifierSet(), TARGET)
    monkeypatch.setattr(simple, "MAX_PAGE_BYTES", 100)
    with pytest.raises(EnvError, match="/simple/multi/ is larger than"):
        choose_sdist(versions_index.url, "multi", SpecifierSet(), TARGET)


def _output(*members: tuple[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        link = tarfile.TarInfo("out/link.whl")  # not a regular file: never read
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        tar.addfile(link)
    return buf.getvalue()


SDIST = PackageFile("markerpkg", "1.0", "markerpkg-1.0.tar.gz", "http://x/markerpkg-1.0.tar.gz", "b" * 64, None, "sdist")


@pytest.mark.parametrize(("members", "problem"), [
    ((), "produced 0 wheels; expected one"),
    ((("out/markerpkg-1.0-py3-none-any.whl", b"a"), ("out/markerpkg-1.0-py2-none-any.whl", b"b")), "produced 2 wheels"),
    ((("out/markerpkg.whl", b"a"),), "not a wheel file name"),
    ((("out/evilpkg-1.0-py3-none-any.whl", b"a"),), "a wheel of another project or version"),
    ((("out/markerpkg-6.6-py3-none-any.whl", b"a"),), "a wheel of another project or version"),
    ((("out/markerpkg-1.0-cp312-cp312-win_amd64.whl", b"a"),), "which Python 3.11.2 on x86_64-manylinux_2_36 cannot install"),
])
def test_what_a_build_container_hands_back_is_checked(members, problem):
    with pytest.raises(EnvError, match=re.escape(problem)):
        wheel_from_output(SDIST, _output(*members), TARGET)


def test_the_one_fitting_wheel_of_a_build_is_taken():
    assert wheel_from_output(SDIST, _output(("out/markerpkg-1.0-cp311-cp311-linux_x86_64.whl", b"ok")), TARGET) == (
        "markerpkg-1.0-cp311-cp311-linux_x86_64.whl", b"ok")


def test_an_sdist_file_name_that_is_not_its_package_is_never_built(cache):
    builder = SdistBuilder(None, "no-image-needed", TARGET, "http://127.0.0.1:9/simple")
    for filename in ("evil-1.0.tar.gz", "markerpkg-6.6.tar.gz", "x; rm -rf ~.tar.gz"):
        with pytest.raises(EnvError, match="is not the source distribution of markerpkg==1.0; refusing to build it"):
            builder.wheel_for(dataclasses.replace(SDIST, filename=filename))


def test_a_cached_built_wheel_that_changed_is_refused(cache):
    builder = SdistBuilder(None, "no-image-needed", TARGET, "http://127.0.0.1:9/simple")
    folder = builder._folder(SDIST)
    folder.mkdir(parents=True)
    (folder / "markerpkg-1.0-py3-none-any.whl").write_bytes(b"built in a container")
    (folder / "sha256").write_text(hashlib.sha256(b"built in a container").hexdigest() + "\n")
    assert builder.wheel_for(SDIST)[1] == hashlib.sha256(b"built in a container").hexdigest()
    (folder / "markerpkg-1.0-py3-none-any.whl").write_bytes(b"changed afterwards")
    with pytest.raises(EnvIntegrityError, match="not the .* recorded when it was built; delete .* to build it again"):
        builder.wheel_for(SDIST)


def test_a_pylock_of_built_sdists_names_the_sdists_not_local_wheels(index, cache, tmp_path):
    res = resolve(decl(("numpy", "a"), ("six==1.17.0", "a")), TARGET, index=index.url)
    assert tomllib.loads(dump_toml(tomllib.loads(res.pylock))) == tomllib.loads(res.pylock)
    six = next(f for f in res.files if f.name == "six")
    # As uv writes a wheel it was offered through --find-links: a file:// URL on this machine.
    local = res.pylock.replace(six.url, (tmp_path / six.filename).as_uri())
    sdist = PackageFile("six", six.version, f"six-{six.version}.tar.gz", "https://example.org/six.tar.gz", "a" * 64,
                        1234, "sdist")
    rewritten = pylock_with_sdists(local, {("six", six.version): sdist})
    assert "file://" not in rewritten
    files = {f.name: f for f in parse_pylock(rewritten, TARGET)}
    assert files["six"] == sdist and files["numpy"] == next(f for f in res.files if f.name == "numpy")
    entry = next(p for p in tomllib.loads(rewritten)["packages"] if p["name"] == "six")
    assert "wheels" not in entry and entry["sdist"]["hashes"] == {"sha256": "a" * 64}
    with pytest.raises(EnvError, match="names a file on this machine"):
        pylock_with_sdists(local, {("numpy", "0.0"): sdist})  # six stays a local wheel: never locked


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


def test_an_ignored_requires_python_is_named_and_resolved_all_the_same(index, cache):
    pins = Declarations((Declared("pyyaml", "skill-writer", "scripts/quick_validate.py (PEP 723)"),),
                        (Declared(">=3.12", "skill-writer", "scripts/quick_validate.py (PEP 723)"),
                         Declared(">=3.10", "other", "scripts/x.py (PEP 723)")))
    with pytest.raises(EnvError, match="pass --ignore-requires-python skill-writer"):
        check_requires_python(pins, TARGET, ignore=("other",))
    said: list[str] = []
    check_requires_python(pins, TARGET, ignore=("skill-writer",), progress=said.append)
    assert said == ["warning: skill-writer: scripts/quick_validate.py (PEP 723) requires Python >=3.12; the agent image "
                    "has Python 3.11.2 and it is used all the same (--ignore-requires-python skill-writer)"]
    resolved = resolve(pins, TARGET, index=index.url, ignore_requires_python=("skill-writer",))
    assert [f.name for f in resolved.files] == ["pyyaml"]


def test_uvs_version_is_asked_once_and_again_when_the_binary_changes(tmp_path, cache):
    """Each run's start needs uv's version (it is in every key); asking is a process, so the
    answer is kept under the binary's identity — a replaced or upgraded uv is asked again."""
    import os

    from skillctl.env.resolve import uv_version

    asked = tmp_path / "asked"
    uv = tmp_path / "uv"

    def install(version: str, mtime: int) -> None:
        uv.write_text(f"#!/bin/sh\necho x >> {asked}\necho 'uv {version}'\n")
        uv.chmod(0o755)
        os.utime(uv, (mtime, mtime))

    def ask() -> str:
        uv_version.cache_clear()  # as a new process would
        return uv_version(str(uv))

    install("0.1.0", 1_000_000)
    assert ask() == "uv 0.1.0" and ask() == "uv 0.1.0"
    assert asked.read_text().count("x") == 1  # the second answer came from the cache
    install("0.22.0", 2_000_000)  # upgraded in place
    assert ask() == "uv 0.22.0" and asked.read_text().count("x") == 2
    silent = tmp_path / "silent"
    silent.write_text("#!/bin/sh\nexit 3\n")
    silent.chmod(0o755)
    uv_version.cache_clear()
    assert uv_version(str(silent)) == "uv (unknown version)"
    assert len(list((cache / "env" / "uv-version").iterdir())) == 2  # an unknown version is not kept
    uv_version.cache_clear()
