"""System libraries: the ELF reader and the loader's rules (``elfcheck``), the Contents index
(``contents``), and, in the engine, an environment whose wheel needs ``libgomp.so.1`` — absent
from the agent image — reported with the Debian package that ships it, until skills.yaml adds it.

The shared objects are real (gcc, in the test) or written byte by byte (``elves.synthetic``: the
classes and byte orders the host's gcc cannot make, and damaged headers). The Debian side is the
signed loopback repository of ``tests/apt_repo.py``, which publishes a Contents index hashed in
its Release, as Debian's mirrors do."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import random
import shutil
import struct
import sys
import time
from pathlib import Path

import pytest

from skillctl.env import contents, elfcheck, syslibs
from skillctl.errors import EnvError, EnvIntegrityError

from .elves import OMP_SOURCE, gcc, synthetic
from .runs import invoke
from .wheels import make_wheel

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from apt_repo import TOOLS, AptRepo, DebPackage, SigningKey  # noqa: E402
from tools import require_tool  # noqa: E402

SITE = "/opt/skills-env/lib/python3.11/site-packages"
LIBGOMP = Path("/usr/lib/x86_64-linux-gnu/libgomp.so.1")


def parse(data: bytes):
    return elfcheck.read_elf(io.BytesIO(bytes(data)), len(data))


# ---------------------------------------------------------------------- the ELF reader


def test_a_gcc_built_library_gives_its_needed_soname_and_runpath(tmp_path):
    runpath = gcc(tmp_path / "a.so", "-L", str(_stub(tmp_path)), "-lskltest", "-Wl,-soname,liba.so.1",
                  "-Wl,-rpath,$ORIGIN/../a.libs")
    rpath = gcc(tmp_path / "b.so", "-L", str(tmp_path), "-lskltest", "-Wl,--disable-new-dtags", "-Wl,-rpath,/opt/x:$ORIGIN")
    info = elfcheck.read_path(str(runpath))
    assert (info.bits, info.machine, info.type, info.soname) == (64, 62, elfcheck.ET_DYN, "liba.so.1")
    assert "libskltest.so.1" in info.needed and info.runpath == "$ORIGIN/../a.libs" and info.rpath == ""
    old = elfcheck.read_path(str(rpath))
    assert old.rpath == "/opt/x:$ORIGIN" and old.runpath == ""


@pytest.mark.parametrize("bits,order,machine", [(32, "<", 3), (64, "<", 62), (32, ">", 8), (64, ">", 43)])
def test_every_class_and_byte_order_is_read(bits, order, machine):
    info = parse(synthetic(bits, order, machine=machine, needed=["libz.so.1", "libm.so.6"], soname="libs.so.2",
                           runpath="$ORIGIN/x.libs"))
    assert (info.bits, info.machine, info.needed, info.soname, info.runpath) == (
        bits, machine, ("libz.so.1", "libm.so.6"), "libs.so.2", "$ORIGIN/x.libs")


def test_files_that_are_not_elf_are_not_shared_objects(tmp_path):
    for body in (b"", b"\x7fEL", b"INPUT ( libfoo.so.1 )\n", b"#!/bin/sh\n", bytes(100)):
        assert parse(body) is None
    (tmp_path / "script.so").write_text("/* GNU ld script */\nGROUP ( libc.so.6 )\n")
    assert elfcheck.read_path(str(tmp_path / "script.so")) is None
    assert elfcheck.read_path(str(tmp_path / "nowhere.so")) is None


def _patched(data: bytearray, offset: int, fmt: str, value: int) -> bytearray:
    out = bytearray(data)
    struct.pack_into(fmt, out, offset, value)
    return out


HOSTILE = {
    # 64-bit little-endian header fields: e_phoff at 32, e_phentsize at 54, e_phnum at 56
    "program headers past the end": lambda d: _patched(d, 32, "<Q", 1 << 40),
    "a huge program header count": lambda d: _patched(d, 56, "<H", 0xFFFF),
    "program headers too small": lambda d: _patched(d, 54, "<H", 8),
    "an unknown class": lambda d: _patched(d, 4, "<B", 9),
    "the dynamic segment past the end": lambda d: _patched(d, 64 + 56 + 8, "<Q", 1 << 50),
    "a dynamic segment claiming exabytes": lambda d: _patched(d, 64 + 56 + 32, "<Q", 1 << 60),
    "a string table in no segment": lambda d: _patched(d, len(d) - 16 * 3 + 8, "<Q", 0x7FFF0000),
    "a string offset past the table": lambda d: _patched(d, len(d) - 16 * 5 + 8, "<Q", 1 << 30),
}


@pytest.mark.parametrize("attack", sorted(HOSTILE))
def test_a_hostile_header_is_an_elf_error_not_a_crash_or_a_big_read(attack):
    data = HOSTILE[attack](synthetic(needed=["libz.so.1"], soname="libx.so.1"))
    try:
        info = parse(data)
    except elfcheck.ElfError:
        return
    assert info is None or isinstance(info, elfcheck.ElfInfo)  # e.g. a dynamic segment cut to what is there


def test_an_unterminated_name_and_a_dynamic_segment_without_end_are_bounded():
    data = synthetic(needed=["lib" + "x" * 5000 + ".so"])
    with pytest.raises(elfcheck.ElfError, match="not terminated within 4096 bytes"):
        parse(data)
    # Entries with no DT_NULL and no string table: read up to the segment's end, then refused.
    endless = synthetic(needed=["libz.so.1"])
    tail = len(endless) - 16 * 3
    endless[tail:] = struct.pack("<qQ", 1, 1) * 3
    with pytest.raises(elfcheck.ElfError, match="without a string table"):
        parse(endless)


def test_every_truncation_and_random_damage_of_a_real_library_is_survived(tmp_path):
    real = (gcc(tmp_path / "a.so", "-L", str(_stub(tmp_path)), "-lskltest")).read_bytes()
    started = time.monotonic()
    for cut in range(0, min(len(real), 16384), 7):
        _survives(real[:cut])
    rng = random.Random(23)
    for _ in range(1500):
        data = bytearray(real)
        for _ in range(rng.randint(1, 8)):
            data[rng.randrange(0, min(len(data), 256))] = rng.randrange(256)
        _survives(data)
    assert time.monotonic() - started < 30


def _survives(data: bytes) -> None:
    try:
        info = parse(data)
    except elfcheck.ElfError:
        return
    assert info is None or all(isinstance(n, str) and len(n) <= elfcheck.MAX_STRING for n in info.needed)


def _stub(folder: Path) -> Path:
    """``libskltest.so.1`` (and the ``libskltest.so`` link gcc looks for) in ``folder``."""
    lib = folder / "libskltest.so.1"
    if not lib.exists():
        gcc(lib, "-Wl,-soname,libskltest.so.1")
        (folder / "libskltest.so").symlink_to(lib.name)
    return folder


# ---------------------------------------------------------------------- the loader's rules


def test_a_venv_tree_is_checked_as_the_loader_would_with_origin_and_bundled_libs(tmp_path):
    venv = tmp_path / "venv"
    site = venv / "lib" / "python3.11" / "site-packages"
    (site / "pkg").mkdir(parents=True)
    (site / "pkg.libs").mkdir()
    stubs = _stub(tmp_path)
    # bundled: pkg.libs/libskltest.so.1, found through $ORIGIN/../pkg.libs
    gcc(site / "pkg.libs" / "libskltest.so.1", "-Wl,-soname,libskltest.so.1")
    gcc(site / "pkg" / "_ok.so", "-L", str(stubs), "-lskltest", "-Wl,-rpath,$ORIGIN/../pkg.libs")
    # not bundled: the same need without a search path, and one nothing has
    gcc(site / "pkg" / "_bad.so", "-L", str(stubs), "-lskltest", str(_named(tmp_path, "libabsent.so.3")))
    (site / "pkg" / "notes.so.txt").write_text("not a shared object")
    (site / "pkg" / "broken.so").write_bytes(bytes(HOSTILE["program headers past the end"](synthetic(needed=["libz.so.1"]))))
    info = site / "pkg-2.0.dist-info"
    info.mkdir()
    (info / "RECORD").write_text("pkg/_bad.so,sha256=x,1\npkg/_ok.so,sha256=x,1\n")
    doc = elfcheck.check_tree(str(venv), "x86_64")
    # libskltest.so.1 is a library of this venv (pkg.libs), so _bad.so gets it once _ok.so is loaded:
    # only libabsent.so.3 is reported.
    assert doc["missing"] == [{"file": str(site / "pkg" / "_bad.so"), "needs": "libabsent.so.3", "distribution": "pkg",
                               "version": "2.0"}]
    assert doc["checked"] == 3 and [u["file"] for u in doc["unreadable"]] == [str(site / "pkg" / "broken.so")]


def _named(folder: Path, soname: str) -> Path:
    out = folder / "named" / soname
    out.parent.mkdir(exist_ok=True)
    return gcc(out, f"-Wl,-soname,{soname}")


def test_a_library_of_another_class_or_machine_does_not_count(tmp_path):
    (tmp_path / "libx.so.1").write_bytes(bytes(synthetic(32, "<", machine=3)))
    lookup = elfcheck.DiskLookup()
    assert not lookup(str(tmp_path), "libx.so.1", 64, 62)
    assert lookup(str(tmp_path), "libx.so.1", 32, 3)
    assert not lookup(str(tmp_path), "libnone.so.1", 64, 62)


def test_rpath_is_ignored_when_runpath_is_there_and_origin_is_the_files_folder():
    info = elfcheck.ElfInfo(64, 62, 3, needed=["liba.so"], rpath="/r", runpath="$ORIGIN/../x.libs:${ORIGIN}")
    assert elfcheck.search_dirs("/v/pkg/m.so", info, ["/lib"]) == ["/v/x.libs", "/v/pkg", "/lib"]
    old = elfcheck.ElfInfo(64, 62, 3, needed=["liba.so"], rpath="/r:$ORIGIN")
    assert elfcheck.search_dirs("/v/pkg/m.so", old, ["/lib"]) == ["/r", "/v/pkg", "/lib"]


def test_ld_so_conf_includes_are_followed_without_looping(tmp_path):
    (tmp_path / "etc" / "ld.so.conf.d").mkdir(parents=True)
    (tmp_path / "etc" / "ld.so.conf").write_text("include /etc/ld.so.conf.d/*.conf\n/opt/first # comment\n")
    (tmp_path / "etc" / "ld.so.conf.d" / "a.conf").write_text("/opt/a\ninclude /etc/ld.so.conf\n")
    found = elfcheck.ld_so_conf(str(tmp_path))
    assert found[:2] == ["/opt/a", "/opt/a"] and found[-1] == "/opt/first" and len(found) < 40


def test_a_wheels_shared_objects_are_read_from_the_zip_and_checked_against_the_image(tmp_path):
    stubs = _stub(tmp_path)
    core = gcc(tmp_path / "_core.so", "-L", str(stubs), "-lskltest", "-Wl,-rpath,$ORIGIN/../sklpkg.libs")
    extra = gcc(tmp_path / "_extra.so", "-L", str(stubs), "-lskltest", str(_named(tmp_path, "libgone.so.2")))
    bundled = (tmp_path / "libskltest.so.1").read_bytes()
    whl = make_wheel(tmp_path, "sklpkg", files={"sklpkg/__init__.py": "", "sklpkg/_core.so": core.read_bytes(),
                                                "sklpkg.libs/libskltest.so.1": bundled,
                                                "sklpkg/_extra.so": extra.read_bytes(),
                                                "sklpkg/readme.so.txt": "text",
                                                "sklpkg/broken.so": bytes(HOSTILE["a huge program header count"](
                                                    synthetic(needed=["libz.so.1"])))})
    libraries = {"system_dirs": ["/lib/x86_64-linux-gnu"], "libraries": {"/lib/x86_64-linux-gnu": ["libc.so.6"]}}
    sha = hashlib.sha256(whl.read_bytes()).hexdigest()
    missing = syslibs.wheel_check([("sklpkg", "1.0", whl, sha)], libraries, "3.11")
    assert missing == [syslibs.MissingLibrary("sklpkg", "1.0", "sklpkg/_extra.so", "libgone.so.2")]
    doc = syslibs.wheel_shared_objects(whl, SITE)
    assert sorted(p for p, _ in doc["elves"]) == [f"{SITE}/sklpkg.libs/libskltest.so.1", f"{SITE}/sklpkg/_core.so",
                                                 f"{SITE}/sklpkg/_extra.so"]
    assert [u["file"] for u in doc["unreadable"]] == [f"{SITE}/sklpkg/broken.so"]


@pytest.mark.parametrize("printed", [[], {"missing": "x"}, {"missing": [1]}, "text"])
def test_a_check_report_of_another_shape_is_an_error_not_a_crash(printed):
    with pytest.raises(EnvError, match="unexpected shape"):
        syslibs.from_check(printed, "3.11")


def test_the_report_names_the_file_the_library_the_package_and_the_fix():
    found = [syslibs.MissingLibrary("lightgbm", "4.5.0", "lightgbm/lib/lib_lightgbm.so", "libgomp.so.1", ("libgomp1",)),
             syslibs.MissingLibrary("x", "1", "x/_x.so", "libnvidia.so.1"),
             syslibs.MissingLibrary("odbc", "18", "odbc/a/libodbcinst.so.2", "libltdl.so.7", ("libltdl7",)),
             syslibs.MissingLibrary("odbc", "18", "odbc/b/libodbcinst.so.2", "libltdl.so.7", ("libltdl7",)),
             syslibs.MissingLibrary("odbc", "18", "odbc/c/libodbcinst.so.2", "libltdl.so.7", ("libltdl7",))]
    assert syslibs.report_lines(found) == [
        "lightgbm 4.5.0: lib_lightgbm.so needs libgomp.so.1, not in the image; Debian package libgomp1 provides it",
        "x 1: _x.so needs libnvidia.so.1, not in the image; no Debian package of the suite's main component ships it",
        "odbc 18: libodbcinst.so.2 (and 2 more files) needs libltdl.so.7, not in the image; Debian package libltdl7 "
        "provides it",
        "add `debian: [libgomp1, libltdl7]` to skills.yaml environment (or the skill's project)",
    ]
    assert syslibs.report_lines([]) == []


# ---------------------------------------------------------------------- the Contents index


def test_contents_lines_become_a_soname_index_of_the_loaders_folders_only():
    text = (
        "usr/lib/x86_64-linux-gnu/libgomp.so.1.0.0                 libs/libgomp1\n"
        "usr/lib/x86_64-linux-gnu/libgomp.so.1                     libs/libgomp1\n"
        "usr/lib/gcc/x86_64-linux-gnu/12/libgomp.so                devel/libgcc-12-dev\n"
        "usr/lib/debug/.build-id/ab/cdef.so                        debug/libgomp1-dbgsym\n"
        "usr/lib/python3/dist-packages/numpy/core/_m.cpython-311-x86_64-linux-gnu.so python/python3-numpy\n"
        "lib/x86_64-linux-gnu/libz.so.1                            libs/zlib1g\n"
        "usr/lib/x86_64-linux-gnu/libblas.so.3                     libs/libblas3,non-free/libs/libopenblas0\n"
        "usr/lib/x86_64-linux-gnu/lapack/liblapack.so.3            libs/liblapack3\n"
        "usr/lib32/libgomp.so.1                                    libs/lib32gomp1\n"
        "usr/libx32/libgomp.so.1                                   libs/libx32gomp1\n"
        "usr/lib/x86_64-linux-gnu/gdk-pixbuf-2.0/2.10.0/loaders/libpng.so  libs/deep\n"
        "usr/share/doc/libgomp1/changelog.gz                       doc/libgomp1\n"
        "usr/lib/x86_64-linux-gnu/" + "x" * 9000 + ".so libs/toolong\n"
        "usr/lib/x86_64-linux-gnu/lib with space.so.1              libs/spaced\n"
    ).encode()
    index = contents.parse_contents(io.BytesIO(text))
    assert index == {"libblas.so.3": ["libblas3", "libopenblas0"], "libgomp.so.1": ["libgomp1"], "liblapack.so.3": ["liblapack3"],
                     "libgomp.so.1.0.0": ["libgomp1"], "lib with space.so.1": ["spaced"], "libz.so.1": ["zlib1g"]}
    assert contents.policy_name("libgomp.so.1") == "libgomp1" and contents.policy_name("libpython3.11.so.1.0") == "libpython3.11-1"
    assert contents.ranked("libfoo.so.2", ["libfoo-dev", "aaa", "libfoo2"]) == ["libfoo2", "aaa", "libfoo-dev"]


def test_a_clearsigned_release_gives_each_index_its_hash_and_size():
    sha = "a" * 64
    text = ("-----BEGIN PGP SIGNED MESSAGE-----\nHash: SHA512\n\nSuite: bookworm\nMD5Sum:\n 0123 9 main/Contents-amd64.gz\n"
            f"SHA256:\n {sha}   1234 main/Contents-amd64.gz\n {'b' * 64} 5 main/binary-amd64/Packages\n"
            "-----BEGIN PGP SIGNATURE-----\n\nxyz\n-----END PGP SIGNATURE-----\n")
    entries = contents.release_entries(text)
    assert entries == {"main/Contents-amd64.gz": (sha, 1234), "main/binary-amd64/Packages": ("b" * 64, 5)}
    assert contents.contents_entry(entries, "amd64") == ("main/Contents-amd64.gz", sha, 1234)
    assert contents.contents_entry(entries, "arm64") is None


@pytest.fixture(scope="module")
def signer():
    for command, package in TOOLS.items():
        require_tool(command, package)
    require_tool("apt-get", "apt")
    key = SigningKey("skillctl-syslibs")
    yield key
    key.close()


def gomp_package() -> DebPackage:
    """A package shipping libgomp.so.1 (the host's, a Debian 12 build) under the test prefix."""
    if not LIBGOMP.is_file():
        pytest.skip(f"{LIBGOMP} is not on this machine (apt-get install libgomp1)")
    return DebPackage("skl-gomp1", "1.0", files={str(LIBGOMP): (LIBGOMP.resolve().read_bytes(), 0o644)})


@pytest.fixture
def apt_repo(tmp_path, signer, monkeypatch):
    with AptRepo(tmp_path / "mirror", "bookworm", "amd64") as served:
        served.add(gomp_package(), tmp_path)
        served.publish(signer)
        env = {"SKILLCTL_DEBIAN_MIRROR": served.url, "SKILLCTL_DEBIAN_KEYRING": str(signer.keyring),
               "SKILLCTL_DEBIAN_SUITE": "bookworm", "SKILLCTL_CACHE_DIR": str(tmp_path / "cache")}
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        yield served, env


def test_the_contents_index_is_verified_against_the_signed_release_cached_and_used_offline(apt_repo):
    served, env = apt_repo
    assert contents.soname_index("amd64") == {"libgomp.so.1": ["skl-gomp1"]}
    cached = list((Path(env["SKILLCTL_CACHE_DIR"]) / "env" / "contents").glob("*.json"))
    assert len(cached) == 1 and not list((Path(env["SKILLCTL_CACHE_DIR"]) / "env" / "files").rglob("*Contents*"))
    served.server.shutdown()  # the mirror is gone: apt keeps its verified lists, whose Release names the cached index
    served.server.server_close()
    said = []
    assert contents.soname_index("amd64", progress=said.append) == {"libgomp.so.1": ["skl-gomp1"]} and said == []
    # Nor any list (apt's state removed): the latest index read for this mirror, with a note.
    shutil.rmtree(Path(env["SKILLCTL_CACHE_DIR"]) / "env" / "apt")
    assert contents.soname_index("amd64", progress=said.append) == {"libgomp.so.1": ["skl-gomp1"]}
    assert said and said[0].startswith("system libraries: using the Contents index read before (apt kept no Release")


def test_a_contents_index_changed_after_signing_is_refused_in_one_line(apt_repo):
    served, _ = apt_repo
    index = served.dist / "main" / "Contents-amd64.gz"
    signed = index.read_bytes()
    evil = gzip.compress(b"usr/lib/x86_64-linux-gnu/libgomp.so.1  libs/evil-package\n", mtime=0)
    for body, says in ((evil, "is larger than the"), (evil[:len(signed)].ljust(len(signed), b"\0"), "has sha256")):
        index.write_bytes(body)
        with pytest.raises(EnvIntegrityError) as refused:
            contents.soname_index("amd64")
        message = str(refused.value)
        assert "\n" not in message and message.startswith("bookworm-main-Contents-amd64.gz from ") and says in message
        assert "pinned; refusing it" in message
    # With the packages looked up for a report, the refusal is the report's note, not a crash.
    found, note = syslibs.with_packages([syslibs.MissingLibrary("x", "1", "x/_x.so", "libgomp.so.1")], "amd64")
    assert found[0].packages == () and note.startswith("no Debian package named: ") and "refusing it" in note


def test_a_release_without_a_contents_index_says_so(apt_repo, signer):
    served, _ = apt_repo
    (served.dist / "main" / "Contents-amd64.gz").unlink()
    release = served.dist / "Release"
    lines = [ln for ln in release.read_text().splitlines() if "Contents-" not in ln]
    release.write_text("\n".join(lines) + "\n")
    signer.sign(release)
    with pytest.raises(EnvError, match=r"lists no main/Contents-amd64\(\.gz\|\.xz\); the Debian package of a missing "
                                       r"library cannot be named$"):
        contents.soname_index("amd64")


# ---------------------------------------------------------------------- in the engine


@pytest.fixture
def gomp_index(index, tmp_path):
    """The loopback index also serving ``sklgomp``: a wheel whose ``_omp.so`` (gcc -fopenmp, here)
    needs libgomp.so.1, which the agent image lacks."""
    lib = gcc(tmp_path / "_omp.so", "-fopenmp", source=OMP_SOURCE)
    assert "libgomp.so.1" in elfcheck.read_path(str(lib)).needed
    whl = make_wheel(tmp_path, "sklgomp", files={"sklgomp/__init__.py": "", "sklgomp/_omp.so": lib.read_bytes()})
    index.files[whl.name] = whl
    yield index
    del index.files[whl.name]


LOAD = ("import ctypes, os, sklgomp\ntry:\n    ctypes.CDLL(os.path.join(os.path.dirname(sklgomp.__file__), '_omp.so'))\n"
        "    print('loaded')\nexcept OSError as exc:\n    print(exc)\n")


@pytest.mark.requires_docker
@pytest.mark.slow
def test_a_wheel_needing_libgomp_is_reported_with_its_package_until_skills_yaml_adds_it(
        project, gomp_index, apt_repo, tmp_path, docker_client, agent_image, own_env_images):
    _, debian_env = apt_repo
    env = dict(project, **debian_env)
    skill = tmp_path / "omp-skill"
    (skill / "scripts").mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: omp-skill\ndescription: Needs OpenMP.\n---\nRun scripts/run.py.\n")
    (skill / "scripts" / "run.py").write_text("import sklgomp\n")
    (skill / "scripts" / "requirements.txt").write_text("sklgomp==1.0\n")
    expected = [{"distribution": "sklgomp", "version": "1.0", "file": "sklgomp/_omp.so", "needs": "libgomp.so.1",
                 "packages": ["skl-gomp1"]}]

    # env infer, on the host: the wheel's ELF file against the agent image's libraries
    inferred = invoke(env, "env", "infer", str(skill), "--check-libraries", "--format", "json")
    assert inferred.exit_code == 0, inferred.output
    assert json.loads(inferred.stdout)["debian"] == {"packages": ["skl-gomp1"], "system_libraries": expected, "note": ""}

    # env build: the check in the image, a warning with the package and the fix, and the JSON list
    built = invoke(env, "env", "build", str(skill), "--format", "json")
    assert built.exit_code == 0, built.output
    doc = json.loads(built.stdout)
    assert doc["system_libraries"] == expected
    assert ("warning: sklgomp 1.0: _omp.so needs libgomp.so.1, not in the image; Debian package skl-gomp1 provides it"
            in built.stderr.splitlines()), built.stderr[-2000:]
    assert "warning: add `debian: [skl-gomp1]` to skills.yaml environment (or the skill's project)" in built.stderr
    # the report is the truth: the loader in the image cannot open the file
    said = docker_client.containers.run(doc["image"], entrypoint=["/opt/skills-env/bin/python3", "-c", LOAD], command=[],
                                        network_disabled=True, remove=True).decode()
    assert "libgomp.so.1: cannot open shared object file" in said, said
    # the same image again: the check is not run again (kept by image id)
    image_id = docker_client.images.get(doc["image"]).id.replace(":", "-")
    kept = sorted((Path(env["SKILLCTL_CACHE_DIR"]) / "env" / "syslibs").glob(f"{image_id}.*.json"))
    assert [p.name.split(".")[1].split("-")[0] for p in kept] == ["check", "report"]
    stamps = [p.stat().st_mtime_ns for p in kept]
    again = invoke(env, "env", "show", str(skill), "--format", "json")
    assert again.exit_code == 0 and json.loads(again.stdout)["system_libraries"] == expected, again.output
    assert [p.stat().st_mtime_ns for p in kept] == stamps

    # with the package under skills.yaml's debian:, the check passes and the file loads
    (tmp_path / "skills.yaml").write_text("skills: {}\nenvironment:\n  debian: [skl-gomp1]\n")
    fixed = invoke(env, "env", "build", str(skill), "--requirements", str(tmp_path / "skills.yaml"), "--format", "json")
    assert fixed.exit_code == 0, fixed.output
    doc = json.loads(fixed.stdout)
    assert doc["system_libraries"] == [] and "not in the image" not in fixed.stderr, fixed.stderr[-2000:]
    said = docker_client.containers.run(doc["image"], entrypoint=["/opt/skills-env/bin/python3", "-c", LOAD], command=[],
                                        network_disabled=True, remove=True).decode()
    assert said == "loaded\n"


@pytest.mark.requires_docker
def test_infer_whose_requirements_do_not_resolve_keeps_its_proposal_with_a_note(project, tmp_path):
    skill = tmp_path / "unresolvable"
    (skill / "scripts").mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: unresolvable\ndescription: Imports yaml.\n---\nRun it.\n")
    (skill / "scripts" / "run.py").write_text("import yaml\n")
    (skill / "scripts" / "requirements.txt").write_text("no-such-package-anywhere==1.0\n")
    result = invoke(project, "env", "infer", str(skill), "--check-libraries", "--format", "json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["missing"] == ["PyYAML"] and doc["debian"]["packages"] == [] and doc["debian"]["system_libraries"] is None
    assert doc["debian"]["note"].startswith("system libraries not checked: ") and "no-such-package-anywhere" in doc["debian"]["note"]
    text = invoke(project, "env", "infer", str(skill), "--check-libraries")
    assert text.exit_code == 0 and text.stdout.startswith("# /// script") and "system libraries not checked" in text.stderr
