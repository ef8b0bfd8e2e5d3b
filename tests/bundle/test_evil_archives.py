"""The malicious-archive corpus: each test is named after the attack it stops.

Every case checks that read_bundle and extract_bundle refuse the bundle with one line naming the
member and the rule, and that the destination is left exactly as it was (``assert_refused``).
"""

from __future__ import annotations

import gzip
import io
import tarfile
import tracemalloc
import zipfile

import pytest

from skillctl.bundle import BundleLimits, BundleRejected, read_bundle
from skillctl.bundle.inflate import OUT_CHUNK
from skillctl.bundle.tarscan import TRAILING_CAP

from .archives import SKILL_MD, M, gz, header_bytes, header_offsets, patch_header, raw_members, skill, tar_bytes, tgz, zero_bomb

GiB = 1 << 30
MiB = 1 << 20


# --- paths --------------------------------------------------------------------------------


def test_refuses_evil_tar_parent_traversal(assert_refused):
    assert_refused(tgz(M("../x", b"pwned")), member="../x", rule="no '..'")


def test_refuses_evil_tar_traversal_inside_the_top_folder(assert_refused):
    assert_refused(tgz(M("evil/a/../../x", b"pwned")), member="evil/a/../../x", rule="no '..'")


def test_refuses_evil_tar_absolute_path(assert_refused):
    assert_refused(tgz(M("/tmp/evil-absolute", b"pwned")), member="/tmp/evil-absolute", rule="no absolute paths")


def test_refuses_evil_tar_windows_backslash_traversal(assert_refused):
    assert_refused(tgz(M("evil\\..\\..\\x", b"pwned")), member="evil\\..\\..\\x", rule="no backslashes")


def test_refuses_evil_tar_windows_drive_letter(assert_refused):
    assert_refused(tgz(M("evil/C:/Windows/x", b"pwned")), member="evil/C:/Windows/x", rule="no ':' (Windows drives and streams)")


def test_refuses_evil_tar_ntfs_alternate_stream(assert_refused):
    assert_refused(tgz(M("evil/SKILL.md:hidden", b"x")), member="evil/SKILL.md:hidden", rule="no ':' (Windows drives and streams)")


def test_refuses_evil_tar_newline_in_name(assert_refused):
    assert_refused(tgz(M("evil/ok.txt\nevil/forged.txt", b"x")), member="evil/ok.txt\nevil/forged.txt", rule="no NUL or control characters")


def test_refuses_evil_tar_nul_in_pax_path(assert_refused):
    data = tgz(M("evil/innocent", b"x", pax={"path": "evil/a\x00/../../x"}))
    assert_refused(data, member="evil/a\x00/../../x", rule="no NUL or control characters")


def test_refuses_evil_tar_pax_path_overriding_a_safe_name(assert_refused):
    data = tgz(M("evil/innocent.txt", b"pwned", pax={"path": "../../escape.txt"}))
    assert_refused(data, member="../../escape.txt", rule="no '..'")


def test_refuses_evil_tar_dot_segments(assert_refused):
    assert_refused(tgz(M("evil/./x", b"x")), member="evil/./x", rule="no '.' or empty path components")


def test_refuses_evil_tar_non_utf8_name(assert_refused):
    tar = tar_bytes(skill() + [M("evil/placeholder", b"x")], tarfile.USTAR_FORMAT)
    offset = header_offsets(tar)[-1]
    data = gz(patch_header(tar, offset, 0, b"evil/\xff\xfe\0"))
    assert_refused(data, member="evil/\ufffd\ufffd", rule="UTF-8 paths")


def test_refuses_evil_tar_path_too_long(assert_refused):
    name = "evil/" + "a" * 300
    assert_refused(tgz(M(name, b"x")), member=name, rule="max_path_length")


def test_refuses_evil_tar_path_too_deep(assert_refused):
    name = "evil/" + "d/" * 20 + "x"
    assert_refused(tgz(M(name, b"x")), member=name, rule="max_depth")


# --- links, devices and other member types ------------------------------------------------


def test_refuses_evil_tar_symlink_to_outside(assert_refused):
    err = assert_refused(tgz(M("evil/link", type=tarfile.SYMTYPE, linkname="/etc")), member="evil/link", rule="no links")
    assert "'/etc'" in str(err)


def test_refuses_evil_tar_symlink_then_file_through_it(assert_refused, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    data = tgz(M("evil/link", type=tarfile.SYMTYPE, linkname=str(outside)), M("evil/link/pwned.txt", b"pwned"))
    assert_refused(data, member="evil/link", rule="no links")
    assert list(outside.iterdir()) == []


def test_refuses_evil_tar_hardlink_to_outside(assert_refused):
    assert_refused(tgz(M("evil/passwd", type=tarfile.LNKTYPE, linkname="/etc/passwd")), member="evil/passwd", rule="no links")


def test_refuses_evil_tar_hardlink_to_member(assert_refused):
    data = tgz(M("evil/copy.md", type=tarfile.LNKTYPE, linkname="evil/SKILL.md"))
    assert_refused(data, member="evil/copy.md", rule="no links")


def test_refuses_evil_tar_pax_linkpath_on_a_file(assert_refused):
    data = tgz(M("evil/file", b"x", pax={"linkpath": "/etc/shadow"}))
    assert_refused(data, member="evil/file", rule="no links")


def test_refuses_evil_tar_gnu_long_link(assert_refused):
    target = "/" + "x" * 120
    data = tgz(M("evil/link", type=tarfile.SYMTYPE, linkname=target), fmt=tarfile.GNU_FORMAT)
    assert_refused(data, member="evil/link", rule="no links")


def test_refuses_evil_tar_char_device(assert_refused):
    data = tgz(M("evil/null", type=tarfile.CHRTYPE, devmajor=1, devminor=3))
    assert_refused(data, member="evil/null", rule="regular files and folders only")


def test_refuses_evil_tar_block_device(assert_refused):
    data = tgz(M("evil/sda", type=tarfile.BLKTYPE, devmajor=8, devminor=0))
    assert_refused(data, member="evil/sda", rule="regular files and folders only")


def test_refuses_evil_tar_fifo(assert_refused):
    assert_refused(tgz(M("evil/pipe", type=tarfile.FIFOTYPE)), member="evil/pipe", rule="regular files and folders only")


def test_refuses_evil_tar_contiguous_file(assert_refused):
    assert_refused(tgz(M("evil/c", b"x", type=tarfile.CONTTYPE)), member="evil/c", rule="regular files and folders only")


def test_refuses_evil_tar_unknown_member_type(assert_refused):
    assert_refused(tgz(M("evil/q", type=b"Q")), member="evil/q", rule="regular files and folders only")


def test_refuses_evil_tar_global_pax_header(assert_refused):
    data = gz(tar_bytes([M("pax_global_header", b"", type=tarfile.XGLTYPE)] + skill()))
    err = assert_refused(data, member="pax_global_header", rule="no global PAX headers")
    assert "global PAX header" in str(err)


def test_refuses_evil_tar_gnu_sparse_rename(assert_refused):
    # GNU tar would write this file as 'evil/../../x'; tarfile would not.
    data = tgz(M("evil/innocent", b"x", pax={"GNU.sparse.name": "../../x"}))
    assert_refused(data, member="evil/innocent", rule="PAX keys limited to path, size, times, owners and comment")


def test_refuses_evil_tar_xattr_capability(assert_refused):
    data = tgz(M("evil/tool", b"x", mode=0o755, pax={"SCHILY.xattr.security.capability": "\x01"}))
    assert_refused(data, member="evil/tool", rule="PAX keys limited to path, size, times, owners and comment")


# --- structure ----------------------------------------------------------------------------


def test_refuses_evil_tar_duplicate_members(assert_refused):
    data = tgz(M("evil/SKILL.md", b"---\nname: evil\ndescription: swapped\n---\n"))
    assert_refused(data, member="evil/SKILL.md", rule="no duplicate members")


def test_refuses_evil_tar_duplicate_folder_entries(assert_refused):
    data = tgz(M("evil/sub", type=tarfile.DIRTYPE), M("evil/sub", type=tarfile.DIRTYPE))
    assert_refused(data, member="evil/sub", rule="no duplicate members")


def test_refuses_evil_tar_case_insensitive_duplicate(assert_refused):
    data = tgz(M("evil/skill.md", b"shadow"))
    assert_refused(data, member="evil/skill.md", rule="no paths that differ only in case or Unicode normalisation")


def test_refuses_evil_tar_unicode_normalisation_duplicate(assert_refused):
    nfc, nfd = "evil/caf\u00e9.txt", "evil/cafe\u0301.txt"
    data = tgz(M(nfc, b"one"), M(nfd, b"two"))
    assert_refused(data, member=nfd, rule="no paths that differ only in case or Unicode normalisation")


def test_refuses_evil_tar_file_then_folder_of_the_same_name(assert_refused):
    data = tgz(M("evil/a", b"file"), M("evil/a/b", b"inside"))
    assert_refused(data, member="evil/a/b", rule="a path is either a file or a folder")


def test_refuses_evil_tar_two_top_folders(assert_refused):
    data = gz(tar_bytes(skill() + skill("other")))
    assert_refused(data, member="other", rule="one top folder")


def test_refuses_evil_tar_wrong_top_folder_name(assert_refused):
    assert_refused(tgz(), member="evil", rule="top folder equals the skill name", expected_name="pdf")


def test_refuses_evil_tar_top_level_file(assert_refused):
    data = gz(tar_bytes([M("README", b"outside the folder")] + skill()))
    assert_refused(data, member="README", rule="one top folder")


def test_refuses_evil_tar_without_skill_md(assert_refused):
    data = gz(tar_bytes([M("evil", type=tarfile.DIRTYPE), M("evil/notes.txt", b"x")]))
    assert_refused(data, member="evil/SKILL.md", rule="SKILL.md at the top of the skill folder")


def test_refuses_evil_tar_empty_archive(assert_refused):
    assert_refused(gz(tar_bytes([])), member=None, rule="one top folder")


def test_refuses_evil_tar_folder_entry_with_hidden_data(assert_refused):
    # tarfile reads the next header right after a folder's; GNU tar skips `size` bytes first:
    # the two would see different members.
    hidden = header_bytes(M("evil/hidden.sh", b""))
    tar = tar_bytes(skill() + [M("evil/dir", type=tarfile.DIRTYPE)])
    offset = header_offsets(tar)[-1]
    tar = patch_header(tar, offset, 124, b"%011o\0" % len(hidden))
    tar = tar[: offset + 512] + hidden + tar[offset + 512 :]
    assert_refused(gz(tar), member="evil/dir/", rule="well-formed ustar/PAX tar")


def test_refuses_evil_tar_bad_checksum_in_mid_archive(assert_refused):
    # tarfile treats a corrupt header after the first as the end of the archive, hiding the rest.
    tar = tar_bytes(skill() + [M("evil/a.txt", b"a"), M("evil/b.txt", b"b")])
    offset = header_offsets(tar)[2]
    corrupt = bytearray(tar)
    corrupt[offset + 10] ^= 0x01
    err = assert_refused(gz(bytes(corrupt)), member=None, rule="well-formed ustar/PAX tar")
    assert "checksum" in str(err)


def test_refuses_evil_tar_gnu_header_with_prefix_area_set(assert_refused):
    # In GNU headers bytes 345..500 are atime/ctime/sparse data; tarfile reads them as a path prefix.
    tar = tar_bytes(skill() + [M("evil/x", b"x")], tarfile.GNU_FORMAT)
    offset = header_offsets(tar)[-1]
    data = gz(patch_header(tar, offset, 345, b"../../.."))
    assert_refused(data, member="evil/x", rule="well-formed ustar/PAX tar")


def test_refuses_evil_tar_v7_header_without_magic(assert_refused):
    tar = tar_bytes(skill())
    data = gz(patch_header(tar, 0, 257, b"\0" * 8))
    assert_refused(data, member=None, rule="well-formed ustar/PAX tar")


def test_refuses_evil_tar_malformed_size_field(assert_refused):
    tar = tar_bytes(skill() + [M("evil/x", b"x")])
    data = gz(patch_header(tar, header_offsets(tar)[-1], 124, b"+0000000001\0"))
    assert_refused(data, member=None, rule="well-formed ustar/PAX tar")


def test_refuses_evil_tar_member_after_end_of_archive(assert_refused):
    tar = tar_bytes(skill())
    hidden = tar_bytes([M("evil/hidden.sh", b"rm -rf /")])
    end = header_offsets(tar)[-1] + 512 + 512 + 1024  # last header, its data block, the end marker
    data = gz(tar[:end] + hidden)
    assert_refused(data, member=None, rule="well-formed ustar/PAX tar")


def test_refuses_evil_tar_truncated_tar_inside_valid_gzip(assert_refused):
    tar = tar_bytes(skill() + [M("evil/big.txt", b"y" * 5000)])
    assert_refused(gz(tar[:2048]), member=None, rule="well-formed ustar/PAX tar")


def test_refuses_evil_tar_two_extended_headers_for_one_member(assert_refused):
    pax1 = tar_bytes([M("evil/a", b"x", pax={"path": "evil/first"})])
    first_two_blocks = pax1[:1024]  # the x header and its records
    tar = tar_bytes(skill())
    eoa = header_offsets(tar)[-1] + 512 + 512
    rest = tar_bytes([M("evil/b", b"y", pax={"path": "evil/second"})])
    data = gz(tar[:eoa] + first_two_blocks + rest)
    assert_refused(data, member="././@PaxHeader", rule="well-formed ustar/PAX tar")


def test_refuses_evil_tar_duplicate_pax_keys(assert_refused):
    tar = tar_bytes(skill() + [M("evil/a", b"x", pax={"path": "evil/aaaa"})])
    offset = header_offsets(tar)[-1]  # the PAX header of the last member
    records = b"18 path=evil/aaaa\n18 path=../../bbb\n"
    block = bytearray(tar[offset + 512 : offset + 1024])
    block[: len(records)] = records
    patched = patch_header(tar, offset, 124, b"%011o\0" % len(records))
    patched = patched[: offset + 512] + bytes(block) + patched[offset + 1024 :]
    assert_refused(gz(patched), member="././@PaxHeader", rule="well-formed ustar/PAX tar")


def test_refuses_evil_tar_old_style_folder_with_a_pax_file_name(assert_refused):
    # Type NUL + header name ending in '/' is a folder to tarfile and GNU tar, whatever PAX says.
    data = tgz(M("evil/dir/", type=tarfile.AREGTYPE, pax={"path": "evil/file"}))
    assert_refused(data, member="evil/file", rule="well-formed ustar/PAX tar")


def test_refuses_evil_tar_pax_records_hidden_in_padding(assert_refused):
    # tarfile parses the whole padded block; a record past the declared size would rename the
    # member for it and not for a reader that honours the size.
    tar = tar_bytes(skill() + [M("evil/a", b"x", pax={"path": "evil/aaaa"})])
    offset = header_offsets(tar)[-1]
    hidden = b"18 path=../../bbb\n"
    start = offset + 512 + 18
    data = gz(tar[:start] + hidden + tar[start + len(hidden) :])
    assert_refused(data, member="././@PaxHeader", rule="well-formed ustar/PAX tar")


def test_refuses_evil_tar_gnu_long_name_continued_in_padding(assert_refused):
    tar = tar_bytes(skill() + [M("evil/" + "n" * 120, b"x")], tarfile.GNU_FORMAT)
    offset = header_offsets(tar)[-1]
    start = offset + 512 + 126  # just past the name and its NUL
    data = gz(tar[:start - 1] + b"/../../x\0" + tar[start + 8 :])
    assert_refused(data, member="././@LongLink", rule="well-formed ustar/PAX tar")


# --- sizes and bombs ----------------------------------------------------------------------


def test_refuses_evil_tar_oversized_single_file(assert_refused):
    data = tgz(M("evil/big.bin", bytes(6 * MiB)))
    err = assert_refused(data, member="evil/big.bin", rule="max_file_size")
    assert err.inflated_bytes < 64 * 1024 + OUT_CHUNK  # refused from the header, before its data


def test_refuses_evil_tar_huge_pax_header(assert_refused):
    data = tgz(M("evil/a", b"x", pax={"comment": "A" * (10 * MiB)}))
    err = assert_refused(data, member="././@PaxHeader", rule="max_header_size")
    assert err.inflated_bytes < 64 * 1024 + OUT_CHUNK


def test_refuses_evil_tar_huge_gnu_long_name(assert_refused):
    data = tgz(M("evil/" + "n" * (200 * 1024), b"x"), fmt=tarfile.GNU_FORMAT)
    assert_refused(data, member="././@LongLink", rule="max_header_size")


def test_refuses_evil_tar_too_many_files(assert_refused):
    data = tgz(*(M(f"evil/f{i:03}", b"x") for i in range(60)))
    assert_refused(data, member="evil/f049", rule="max_files", limits=BundleLimits(max_files=50))


def test_refuses_evil_tar_too_many_empty_folders(assert_refused):
    data = tgz(*(M(f"evil/d{i:03}", type=tarfile.DIRTYPE) for i in range(60)))
    assert_refused(data, member="evil/d049", rule="max_dirs", limits=BundleLimits(max_dirs=50))


def test_refuses_evil_tar_total_size_over_the_cap(assert_refused):
    data = tgz(*(M(f"evil/part{i}", bytes(900_000)) for i in range(5)))
    limits = BundleLimits(max_file_size=MiB, max_total_size=3 * MiB)
    err = assert_refused(data, member="evil/part3", rule="max_total_size", limits=limits)
    assert err.inflated_bytes < 3 * MiB + OUT_CHUNK + 10 * 1024


def test_refuses_evil_tar_compressed_bundle_over_the_cap(assert_refused):
    data = tgz(M("evil/noise", bytes(range(256)) * 100))
    assert_refused(data, member=None, rule="max_bundle_size", limits=BundleLimits(max_bundle_size=len(data) - 1))


@pytest.fixture(scope="module")
def hundred_thousand_files() -> bytes:
    # One header template, the six name digits and the checksum patched per member: 100k
    # members in well under a second (tarfile.addfile takes several).
    template = bytearray(header_bytes(M("evil/f000000", b"x"), tarfile.USTAR_FORMAT))
    base = sum(template) - sum(template[6:12]) - sum(template[148:156]) + 8 * 0x20
    data_block = b"x" + bytes(511)
    parts = [raw_members(skill())]
    for i in range(100_000):
        digits = b"%06d" % i
        template[6:12] = digits
        template[148:156] = b"%06o\0 " % (base + sum(digits))
        parts.append(bytes(template))
        parts.append(data_block)
    tar = b"".join(parts) + bytes(10240)
    head = tar[: 1536 + 600 * 1024] + bytes(1024)  # the skill and 600 members, as tarfile sees them
    assert len(header_offsets(head)) == 2 + 600
    return gzip.compress(tar, compresslevel=1, mtime=0)


def test_refuses_evil_tar_100k_tiny_files(assert_refused, hundred_thousand_files):
    # SKILL.md is file 1, so f000499 is file 501: the 99,500 after it are never inflated.
    err = assert_refused(hundred_thousand_files, member="evil/f000499", rule="max_files")
    assert err.inflated_bytes < 502 * 1024 + 2048 + OUT_CHUNK


def _peak_while(fn) -> tuple[BaseException, int]:
    tracemalloc.start()
    try:
        fn()
    except BaseException as exc:  # noqa: BLE001 - returned to the caller for inspection
        caught = exc
    else:
        raise AssertionError("expected a refusal")
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    return caught, peak


def test_refuses_evil_tar_gzip_bomb_of_zeros():
    bomb = zero_bomb(b"", 2 * GiB)  # ~2 MB that inflate to 2 GiB of zeros
    assert len(bomb) < 4 * MiB
    err, peak = _peak_while(lambda: read_bundle(bomb, source="bomb"))
    assert isinstance(err, BundleRejected)
    assert err.rule == "well-formed ustar/PAX tar" and "padding" in str(err)
    assert err.inflated_bytes <= TRAILING_CAP + 1024 + OUT_CHUNK
    assert peak < 8 * MiB


def test_refuses_evil_tar_gzip_bomb_after_a_valid_skill():
    bomb = zero_bomb(tar_bytes(skill()), 2 * GiB)
    err, peak = _peak_while(lambda: read_bundle(bomb, source="bomb"))
    assert isinstance(err, BundleRejected) and err.rule == "well-formed ustar/PAX tar", err
    assert err.inflated_bytes <= 10240 + TRAILING_CAP + OUT_CHUNK
    assert peak < 8 * MiB


def test_refuses_evil_tar_gzip_bomb_in_a_member_claiming_its_size():
    prefix = raw_members(skill()) + header_bytes(M("evil/zeros", size=2 * GiB))
    bomb = zero_bomb(prefix, 2 * GiB)
    err, peak = _peak_while(lambda: read_bundle(bomb, source="bomb"))
    assert isinstance(err, BundleRejected) and (err.member, err.rule) == ("evil/zeros", "max_file_size"), err
    assert err.inflated_bytes <= len(prefix) + OUT_CHUNK
    assert peak < 8 * MiB


def test_refuses_evil_tar_gzip_bomb_spread_over_members_within_the_file_cap():
    # Each member is under the per-file cap; together they pass the total: counted as inflated.
    limits = BundleLimits(max_file_size=MiB, max_total_size=8 * MiB)
    head = raw_members(skill())
    data = gz(head + b"".join(header_bytes(M(f"evil/z{i:04}", size=MiB)) + bytes(MiB) for i in range(64)) + bytes(10240))
    err, peak = _peak_while(lambda: read_bundle(data, limits=limits, source="bomb"))
    assert isinstance(err, BundleRejected) and (err.member, err.rule) == ("evil/z0007", "max_total_size"), err
    assert err.inflated_bytes <= 8 * MiB + 20 * 1024 + OUT_CHUNK
    # SKILL.md and z0000..z0006 fit; z0007 would pass 8 MiB. Peak: those seven files, a few chunks.
    assert peak < 7 * MiB + 6 * MiB


# --- the gzip layer -----------------------------------------------------------------------


def test_refuses_evil_tar_truncated_gzip(assert_refused):
    data = tgz(M("evil/a.txt", b"a" * 3000))
    assert_refused(data[:-12], member=None, rule="one complete gzip stream")


def test_refuses_evil_tar_gzip_with_corrupt_crc(assert_refused):
    data = bytearray(tgz())
    data[-8] ^= 0xFF
    assert_refused(bytes(data), member=None, rule="one complete gzip stream")


def test_refuses_evil_tar_trailing_garbage(assert_refused):
    err = assert_refused(tgz() + b"garbage", member=None, rule="one complete gzip stream")
    assert "data follows" in str(err)


def test_refuses_evil_tar_concatenated_gzip_members(assert_refused):
    second = gz(tar_bytes([M("evil/extra.sh", b"echo pwned")]))
    err = assert_refused(tgz() + second, member=None, rule="one complete gzip stream")
    assert "second gzip member" in str(err)


def test_refuses_evil_tar_not_gzip_at_all(assert_refused):
    assert_refused(tar_bytes(skill()), member=None, rule="one complete gzip stream")


def test_refuses_evil_tar_zip_instead_of_tgz(assert_refused):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("evil/SKILL.md", SKILL_MD)
    assert_refused(buf.getvalue(), member=None, rule="one complete gzip stream")


def test_refuses_evil_tar_empty_input(assert_refused):
    assert_refused(b"", member=None, rule="one complete gzip stream")


# --- the inflater on its own (its cap is a backstop the member rules normally pre-empt) ----


def test_inflater_stops_at_its_cap_whatever_the_stream_says():
    from skillctl.bundle.inflate import Inflater
    from skillctl.bundle.members import Refused

    inflater = Inflater(zero_bomb(b"", 64 * MiB), max_output=MiB)
    with pytest.raises(Refused, match="decompresses to more than 1048576 bytes") as caught:
        for _ in inflater:
            pass
    assert caught.value.rule == "max_total_size"
    assert MiB < inflater.produced <= MiB + OUT_CHUNK


def test_inflater_yields_exactly_the_stream_and_its_digest():
    import hashlib

    from skillctl.bundle.inflate import Inflater

    payload = bytes(range(256)) * 5000
    inflater = Inflater(gz(payload), max_output=len(payload))
    assert b"".join(inflater) == payload
    assert inflater.finished and inflater.tar_hash.hexdigest() == hashlib.sha256(payload).hexdigest()
