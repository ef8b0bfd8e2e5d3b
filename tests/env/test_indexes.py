"""Per-package indexes: ``--extra-index-url`` and skills.yaml ``environment.indexes``, with two
real loopback indexes. A package pinned to an index comes only from it (even when another index
has a higher version); the pylock and the lock record each package's index; credentials given in
an index URL are used, never printed, cached or locked."""

from __future__ import annotations

import base64
import json
import tomllib

import pytest
from click.testing import CliRunner

from package_index import PackageIndex
from skillctl.cli import cli
from skillctl.env.declare import Declarations, Declared, project_declarations
from skillctl.env.files import Wanted, ensure_files
from skillctl.env.lock import environment_from_section, environment_section
from skillctl.env.prepare import Environment
from skillctl.env import resolve as resolve_module
from skillctl.env.resolve import indexes, resolve
from skillctl.errors import EnvError

from .conftest import TARGET
from .wheels import make_wheel

SECRET = "s3cr3t-token"


@pytest.fixture(scope="module")
def two_indexes(tmp_path_factory):
    """first: pinpkg 2.0, freepkg 1.0, onlyfirst 1.0; second: pinpkg 1.0, freepkg 3.0."""
    first, second = tmp_path_factory.mktemp("first"), tmp_path_factory.mktemp("second")
    for name, version in (("pinpkg", "2.0"), ("freepkg", "1.0"), ("onlyfirst", "1.0")):
        make_wheel(first, name, version)
    for name, version in (("pinpkg", "1.0"), ("freepkg", "3.0")):
        make_wheel(second, name, version)
    with PackageIndex(first) as a, PackageIndex(second) as b:
        yield a, b


def with_credentials(url: str) -> str:
    return url.replace("http://", f"http://user:{SECRET}@")


def project_env(second_url: str, *names: str) -> Declarations:
    return project_declarations({"python": ["pinpkg", "freepkg"],
                                 "indexes": [{"url": second_url, "packages": list(names)}]})


def test_a_pinned_package_comes_only_from_its_index_and_the_lock_records_every_index(two_indexes, cache, tmp_path):
    first, second = two_indexes
    res = resolve(project_env(second.url, "PinPkg"), TARGET, index=with_credentials(first.url))
    got = {f.name: (f.version, f.index) for f in res.files}
    # pinpkg 2.0 on the first index is never taken; freepkg 3.0 on the second is not offered
    assert got == {"pinpkg": ("1.0", second.url), "freepkg": ("1.0", first.url)}
    assert not [r for r in second.requests if "freepkg" in r]
    assert all(p["index"] for p in tomllib.loads(res.pylock)["packages"])
    section = environment_section(Environment(project_env(second.url, "PinPkg"), res), tmp_path / "skills.lock")
    assert section["index_url"] == first.url and section["indexes"] == [{"url": second.url, "packages": ["pinpkg"]}]
    written = json.dumps(section) + (tmp_path / "pylock.skills.toml").read_text()
    cached = "".join(p.read_text() for p in (cache / "env" / "resolutions").iterdir())
    assert SECRET not in written and SECRET not in cached and "user:" not in written
    # A locked run needs nothing else: the files and their indexes come back from the lock.
    locked = environment_from_section(json.loads(json.dumps(section)), tmp_path / "skills.lock")
    assert {f.name: f.index for f in locked.python.files} == {"pinpkg": second.url, "freepkg": first.url}
    assert locked.python.index_list().pinned == res.indexes.pinned


def test_a_package_pinned_but_only_pulled_in_by_a_dependency_still_comes_from_its_index(tmp_path, cache):
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir(), second.mkdir()
    make_wheel(first, "pinpkg", "2.0"), make_wheel(second, "pinpkg", "1.0")
    wheel = make_wheel(first, "needspin", "1.0")
    _add_requires(wheel, "pinpkg")
    with PackageIndex(first) as a, PackageIndex(second) as b:
        decl = project_declarations({"python": ["needspin"], "indexes": [{"url": b.url, "packages": ["pinpkg"]}]})
        res = resolve(decl, TARGET, index=a.url)
    assert {f.name: (f.version, f.index) for f in res.files} == {"needspin": ("1.0", a.url), "pinpkg": ("1.0", b.url)}


def test_extra_indexes_are_searched_first_and_each_package_records_where_it_came_from(two_indexes, cache):
    first, second = two_indexes
    decl = Declarations((Declared("freepkg", "a", "x"), Declared("onlyfirst", "a", "x")))
    res = resolve(decl, TARGET, index=indexes(first.url, [with_credentials(second.url)]))
    assert {f.name: (f.version, f.index) for f in res.files} == {"freepkg": ("3.0", second.url),
                                                                 "onlyfirst": ("1.0", first.url)}
    assert res.indexes.extra == (second.url,) and SECRET not in res.pylock


def test_credentials_of_an_index_are_sent_with_its_downloads_and_never_shown(two_indexes, cache, tmp_path,
                                                                            monkeypatch):
    first, second = two_indexes
    res = resolve(Declarations((Declared("onlyfirst", "a", "x"),)), TARGET, index=with_credentials(first.url))
    (f,) = res.files
    assert SECRET not in f.url and SECRET not in res.index_url
    before = len(first.requests)
    ensure_files([Wanted(f.filename, f.url, f.sha256, f.size)])
    sent = first.authorizations[before:]
    assert sent and all(base64.b64decode(a.split()[1]).decode() == f"user:{SECRET}" for a in sent)
    # A locked run resolves nothing: its downloads take the credentials from the environment.
    monkeypatch.setattr(resolve_module, "_CREDENTIALS", {})
    monkeypatch.setenv("SKILLCTL_EXTRA_INDEX_URL", with_credentials(first.url))
    monkeypatch.setenv("SKILLCTL_CACHE_DIR", str(tmp_path / "fresh"))
    before = len(first.requests)
    ensure_files([Wanted(f.filename, f.url, f.sha256, f.size)])
    assert first.authorizations[before:] and all(a for a in first.authorizations[before:])


def test_a_failed_resolution_does_not_print_the_credentials(two_indexes, cache):
    first, _ = two_indexes
    with pytest.raises(EnvError) as err:
        resolve(Declarations((Declared("nosuchpkg", "a", "x"),)), TARGET, index=with_credentials(first.url))
    assert SECRET not in str(err.value)


@pytest.mark.parametrize("indexes_value, problem", [
    ([{"url": "https://user:pw@example.org/simple", "packages": ["torch"]}], "carries credentials.*~/.netrc"),
    ([{"url": "ftp://example.org/simple"}], "not an http"),
    ([{"url": "https://a.example/simple", "packages": ["torch"]}, {"url": "https://b.example/simple", "packages": ["Torch"]}],
     "torch is pinned to https://a.example/simple already"),
    ([{"url": "https://a.example/simple", "packages": ["not a name"]}], "packages must be a list of distribution names"),
    ({"url": "https://a.example/simple"}, "must be a list"),
    ([{"url": "https://a.example/simple", "pakages": ["x"]}], "must be a mapping with 'url'"),
])
def test_bad_indexes_in_skills_yaml_are_refused_in_one_line(tmp_path, indexes_value, problem):
    import yaml

    path = tmp_path / "skills.yaml"
    path.write_text(yaml.safe_dump({"skills": {}, "environment": {"python": ["x"], "indexes": indexes_value}}))
    result = CliRunner().invoke(cli, ["env", "show", "--requirements", str(path), "--no-resolve"])
    assert result.exit_code == 1, result.output
    assert len(result.output.strip().splitlines()) == 1 and "Traceback" not in result.output
    import re

    assert re.search(problem, result.output), result.output


def test_env_show_json_keeps_its_keys_when_nothing_is_declared_or_resolved(tmp_path):
    (tmp_path / "skills.yaml").write_text("skills: {}\n")
    result = CliRunner().invoke(cli, ["env", "show", "--requirements", str(tmp_path / "skills.yaml"), "--no-resolve",
                                      "--format", "json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["python"] == [] and doc["debian"] == [] and "target" in doc and doc["target"] is None


def _add_requires(wheel, requirement: str) -> None:
    """Give a test wheel a Requires-Dist line (rewriting METADATA and its RECORD entry)."""
    import hashlib
    import zipfile

    with zipfile.ZipFile(wheel) as zf:
        members = {i.filename: (i, zf.read(i)) for i in zf.infolist()}
    meta = next(n for n in members if n.endswith("METADATA"))
    record = next(n for n in members if n.endswith("RECORD"))
    body = members[meta][1] + f"Requires-Dist: {requirement}\n".encode()
    digest = base64.urlsafe_b64encode(hashlib.sha256(body).digest()).rstrip(b"=").decode()
    lines = [ln if not ln.startswith(meta + ",") else f"{meta},sha256={digest},{len(body)}"
             for ln in members[record][1].decode().splitlines()]
    members[meta] = (members[meta][0], body)
    members[record] = (members[record][0], ("\n".join(lines) + "\n").encode())
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as zf:
        for info, data in members.values():
            zf.writestr(info, data)


@pytest.mark.requires_docker
def test_env_show_takes_extra_indexes_and_the_skills_yaml_pins_and_prints_no_credentials(two_indexes, tmp_path,
                                                                                          agent_image, monkeypatch):
    first, second = two_indexes
    monkeypatch.setenv("SKILLCTL_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "skills.yaml").write_text(json.dumps({"skills": {}, "environment": {
        "python": ["pinpkg", "onlyfirst"], "indexes": [{"url": second.url, "packages": ["pinpkg"]}]}}))
    result = CliRunner().invoke(cli, [
        "env", "show", "--requirements", str(tmp_path / "skills.yaml"), "--image", agent_image,
        "--index-url", with_credentials(first.url), "--extra-index-url", with_credentials(second.url),
        "--format", "json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert SECRET not in result.stdout + result.stderr
    doc = json.loads(result.stdout)
    assert doc["index_url"] == first.url and doc["extra_index_urls"] == [second.url]
    assert doc["indexes"] == [{"url": second.url, "packages": ["pinpkg"]}]
    assert {f["name"]: (f["version"], f["index"]) for f in doc["python"]} == {
        "pinpkg": ("1.0", second.url), "onlyfirst": ("1.0", first.url)}


def test_scrubbing_never_fails_on_a_url_urllib_cannot_read():
    from skillctl.env.resolve import authenticated, scrub

    assert scrub("http://user:pw@[::1") == "http://[::1" and scrub("oci://[::1") == "oci://[::1"
    assert authenticated("oci://[::1") == "oci://[::1"
