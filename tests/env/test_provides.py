"""What wheels provide to ``import`` — from real wheels' file lists, read in place or by HTTP
Range from the loopback index — and the check of a skill's imports against a resolution."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from package_index import PackageIndex
from sandbox_fixtures import on_ci

from skillctl.env.declare import skill_declarations
from skillctl.env.files import Wanted, cached_path
from skillctl.env.imports import choices_of, folder_reader
from skillctl.env.prepare import Environment, check_environment, skill_imports
from skillctl.env.provides import RangeUnsupported, local_provides, names_from_listing, remote_provides, wheel_provides
from skillctl.env.resolve import resolve

from .conftest import TARGET, WHEELS
from .wheels import make_wheel

METADATA = Path(os.environ.get("SKILLCTL_TEST_METADATA", WHEELS / "metadata"))


def wheel(name: str) -> Path:
    found = sorted(WHEELS.glob(f"{name}-*.whl"))
    if not found:
        pytest.skip(f"no {name} wheel in {WHEELS}: run scripts/test.sh (it downloads them once)")
    return found[0]


# ------------------------------------------------------------------------------ file lists


def test_a_listing_gives_packages_modules_extensions_namespaces_and_data_purelib():
    p = names_from_listing([
        "pkg/__init__.py", "pkg/sub/x.py", "single.py", "_speedups.cpython-311-x86_64-linux-gnu.so", "_abi.abi3.so",
        "ns/inner/__init__.py", "ns/other.py", "pkg.libs/libz.so.1", "data_only/readme.txt",
        "extra-1.0.data/purelib/viapurelib/__init__.py", "extra-1.0.data/scripts/tool", "extra-1.0.dist-info/RECORD",
        "not-an-identifier/x.py",
    ])
    assert p.names == {"pkg", "single", "_speedups", "_abi", "ns", "ns.inner", "ns.other", "viapurelib"}
    assert p.namespaces == {"ns"} and not p.unknown
    assert p.provides("pkg.sub.x") and p.provides("ns.inner.deep") and p.provides("ns")
    assert not p.provides("ns.missing") and not p.provides("data_only") and not p.provides("extra")


def test_top_level_txt_adds_its_names_and_a_pth_only_wheel_is_unknown():
    assert names_from_listing(["a/__init__.py"], "a\nhidden\n").names == {"a", "hidden"}
    only_pth = names_from_listing(["thing.pth", "thing-1.0.dist-info/RECORD"])
    assert only_pth.unknown and not only_pth.names


def test_real_wheels_provide_their_modules():
    assert local_provides(wheel("pyyaml")).names == {"yaml", "_yaml"}
    proto = local_provides(sorted(WHEELS.glob("protobuf-*-py3-none-any.whl"))[0])
    assert "google" in proto.namespaces and proto.provides("google.protobuf.json_format")
    assert not proto.provides("google.cloud.storage")
    assert local_provides(wheel("python_dateutil")).names == {"dateutil"}


def _metadata_files() -> list[Path]:
    files = sorted(METADATA.glob("*.json"))
    if not files:
        message = f"no wheel file lists in {METADATA}: run scripts/test.sh (scripts/fetch_test_wheels.py fetches them)"
        pytest.fail(message) if on_ci() else pytest.skip(message)
    return files


def test_the_shipped_map_gives_distributions_whose_real_wheels_provide_the_import():
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
    from fetch_test_wheels import MAP_CHECKS

    from skillctl.env.imports import mapped

    seen = {}
    for path in _metadata_files():
        doc = json.loads(path.read_text())
        seen[doc["import"]] = doc
    assert set(MAP_CHECKS) <= set(seen), f"file lists missing for {sorted(set(MAP_CHECKS) - set(seen))}: run setup again"
    for module in MAP_CHECKS:
        doc = seen[module]
        assert doc["distribution"] == mapped(module), f"{module}: the file list is of an older map entry; run setup again"
        provided = names_from_listing(doc["members"], doc["top_level"])
        assert provided.provides(module), f"{module} -> {doc['distribution']}: {doc['filename']} provides {provided.shown()}"
    # the entries corrected after real skills got unrelated packages
    assert (mapped("esm"), mapped("parallel"), mapped("tdc")) == ("fair-esm", "parallel-web", "PyTDC")


# ------------------------------------------------------------------------------ Range reads


def test_range_reads_only_the_central_directory_and_agree_with_the_file(index):
    for path in (wheel("pandas"), wheel("pyyaml"), wheel("six")):
        url = index.url.replace("/simple", "/files/") + path.name
        before = len(index.requests)
        provided, remote = remote_provides(url, path.stat().st_size)
        assert provided == local_provides(path)
        assert len(index.requests) - before == remote.requests <= 3
        assert remote.fetched <= max(200_000, path.stat().st_size // 20)  # pandas: ~170 kB of ~12 MB


def test_a_range_of_another_size_than_pinned_is_refused(index):
    path = wheel("six")
    with pytest.raises(RangeUnsupported, match="not the 5 pinned"):
        remote_provides(index.url.replace("/simple", "/files/") + path.name, 5)


def test_an_index_ignoring_range_falls_back_to_a_full_hash_checked_download(tmp_path, cache):
    import hashlib

    from skillctl.env.resolve import PackageFile

    path = wheel("six")
    folder = tmp_path / "served"
    folder.mkdir()
    (folder / path.name).write_bytes(path.read_bytes())
    with PackageIndex(folder) as plain:
        plain.ranges = False
        f = PackageFile("six", "1.16.0", path.name, plain.url.replace("/simple", "/files/") + path.name,
                        hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_size)
        with pytest.raises(RangeUnsupported, match="HTTP 200"):
            remote_provides(f.url, f.size)
        lines: list[str] = []
        assert wheel_provides([f], download=False)["six"][1] is None  # no download: cannot tell
        assert not cached_path(Wanted(f.filename, f.url, f.sha256, f.size)).exists()
        found = wheel_provides([f], download=True, progress=lines.append)["six"][1]
        assert found is not None and found.names == {"six"}
        assert cached_path(Wanted(f.filename, f.url, f.sha256, f.size)).is_file()  # verified, kept
        assert any("by Range failed (HTTP 200 to a Range request); downloading it" in line for line in lines)
        before = len(plain.requests)
        assert wheel_provides([f], download=True)["six"][1] == found  # now read from the cache
        assert len(plain.requests) == before


# ------------------------------------------------------------------------------ kept answers


def _package_file(path: Path, url: str = "http://127.0.0.1:9/none"):
    import hashlib

    from skillctl.env.resolve import PackageFile

    name = path.name.split("-")[0].lower()
    return PackageFile(name, path.name.split("-")[1], path.name, url, hashlib.sha256(path.read_bytes()).hexdigest(),
                       path.stat().st_size)


def _in_cache(path: Path):
    f = _package_file(path)
    dest = cached_path(Wanted(f.filename, f.url, f.sha256, f.size))
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_bytes(path.read_bytes())
    return f, dest


def test_what_a_cached_wheel_provides_is_kept_so_a_later_start_opens_no_zip(cache):
    f, copy = _in_cache(wheel("pyyaml"))
    first = wheel_provides([f], download=False)["pyyaml"][1]
    assert first is not None and first.names == {"yaml", "_yaml"}
    copy.write_bytes(b"not a zip any more")  # were it opened again, this could not be read
    lines: list[str] = []
    assert wheel_provides([f], download=False, progress=lines.append)["pyyaml"][1] == first
    assert lines == []


def test_a_kept_answer_is_one_of_these_rules_and_of_a_real_sha256(cache):
    from skillctl.env.provides import Provides, keep_provides, kept_provides

    f, _copy = _in_cache(wheel("six"))
    forged = Provides(frozenset({"forged"}))
    kept = cache / "env" / "provides"
    kept.mkdir(parents=True)
    (kept / f"{f.sha256}-0123456789abcdef.json").write_text(  # made by other rules: not used
        json.dumps({"names": ["forged"], "namespaces": [], "unknown": False}))
    assert kept_provides(f.sha256) is None
    assert wheel_provides([f], download=False)["six"][1].names == {"six"}
    keep_provides(f.sha256, forged)  # under these rules it is what is read (so nothing else is)
    assert wheel_provides([f], download=False)["six"][1] == forged
    (kept / next(p.name for p in kept.iterdir() if not p.name.endswith("0123456789abcdef.json"))).write_text("{not json")
    assert wheel_provides([f], download=False)["six"][1].names == {"six"}  # unreadable: the wheel again
    before = sorted(p for p in cache.rglob("*") if p.is_file())
    keep_provides("../../outside", forged)  # not a sha256: never part of a file name
    assert kept_provides("../../outside") is None
    assert sorted(p for p in cache.rglob("*") if p.is_file()) == before and not (cache.parent / "outside").exists()


def test_a_range_read_is_never_kept(index, cache):
    path = wheel("six")
    f = _package_file(path, index.url.replace("/simple", "/files/") + path.name)
    assert wheel_provides([f], download=False)["six"][1].names == {"six"}  # by Range: the file is not cached
    assert not cached_path(Wanted(f.filename, f.url, f.sha256, f.size)).exists()
    assert not (cache / "env" / "provides").exists()
    before = len(index.requests)
    wheel_provides([f], download=False)
    assert len(index.requests) > before  # read by Range again: unchecked bytes are not remembered


# ------------------------------------------------------------------------------ the check


def _skill(root: Path, name: str, script: str, skill_md: str = "body\n") -> Path:
    folder = root / name
    (folder / "scripts").mkdir(parents=True)
    (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: d\n---\n{skill_md}")
    (folder / "scripts" / "x.py").write_text(script)
    return folder


def _checked(folder: Path, index_url: str) -> list:
    files = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
    decl = skill_declarations(folder.name, files, folder_reader(folder))
    env = Environment(decl, resolve(decl, TARGET, index=index_url))
    return check_environment(env, skill_imports(folder.name, files, folder_reader(folder), decl))


def test_an_import_the_resolved_wheel_does_not_provide_is_a_located_warning(tmp_path, cache):
    served = tmp_path / "served"
    served.mkdir()
    make_wheel(served, "tdc", "0.1", files={"allie/__init__.py": ""})  # the unrelated `tdc` on PyPI
    skill = _skill(tmp_path, "drugs", '# /// script\n# dependencies = ["tdc"]\n# ///\nimport os\nimport tdc\nimport yaml\n')
    with PackageIndex(served) as idx:
        found = _checked(skill, idx.url)
    by_module = {c.module: c for c in found}
    assert by_module["tdc"].message == (
        "drugs/scripts/x.py:5: imports 'tdc', but tdc 0.1 (the distribution it was resolved to) provides 'allie'; "
        "declare the distribution that provides it (PyTDC?)")
    assert (by_module["tdc"].line, by_module["tdc"].resolved) == (5, "tdc 0.1")
    # undeclared, and nothing resolved provides it
    assert by_module["yaml"].message == ("drugs/scripts/x.py:6: imports 'yaml', which no distribution of the "
                                         "environment provides; declare 'PyYAML' (by the import-name map)")


def test_imports_the_real_wheels_provide_pass_and_optional_ones_are_left_alone(tmp_path, index, cache):
    skill = _skill(tmp_path, "fine", '# /// script\n# dependencies = ["pyyaml", "protobuf"]\n# ///\n'
                   "import sys\nimport yaml\nfrom google.protobuf import json_format\n"
                   "try:\n    import ujson\nexcept ImportError:\n    ujson = None\n"
                   "if sys.platform == 'win32':\n    import win32api\n")
    assert _checked(skill, index.url) == []


def test_choices_carry_provenance_for_the_check(tmp_path):
    skill = _skill(tmp_path, "p", "import esm\nimport icons\nimport zzunknown\n",
                   "Run `pip install fair-esm` first. Icons come from scripts/icons.py.\n")
    files = sorted(str(p.relative_to(skill)) for p in skill.rglob("*") if p.is_file())
    got = {c.use.module: (c.distribution, c.provenance) for c in choices_of(files, folder_reader(skill), [])}
    assert got == {"esm": ("fair-esm", "map"), "icons": (None, "local"), "zzunknown": ("zzunknown", "name")}


@pytest.mark.requires_docker
def test_env_show_reports_the_checks_on_stderr_and_in_json(tmp_path, cache, agent_image):
    from click.testing import CliRunner

    from skillctl.cli import cli

    served = tmp_path / "served"
    served.mkdir()
    make_wheel(served, "parallel", "0.1", files={"parallel_ssh/__init__.py": ""})
    skill = _skill(tmp_path, "web", '# /// script\n# dependencies = ["parallel"]\n# ///\nimport parallel\n',
                   "Install: `pip install parallel`\n")
    with PackageIndex(served) as idx:
        result = CliRunner().invoke(cli, ["env", "show", str(skill), "--index-url", idx.url, "--image", agent_image,
                                          "--format", "json"], catch_exceptions=False)
        text = CliRunner().invoke(cli, ["env", "show", str(skill), "--index-url", idx.url, "--image", agent_image],
                                  catch_exceptions=False)
    assert result.exit_code == 0, result.output
    checks = json.loads(result.stdout)["checks"]
    expected = ("web/scripts/x.py:4: imports 'parallel', but parallel 0.1 (the distribution it was resolved to) "
                "provides 'parallel_ssh'; declare the distribution that provides it (parallel-web?)")
    assert [c["message"] for c in checks] == [expected]
    assert f"warning: {expected}" in text.stderr and "parallel==0.1" in text.stdout
