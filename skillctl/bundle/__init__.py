"""Bundles: a skill folder as one reproducible ``.skill.tgz``, and safe reading of any bundle.

Packing (``pack``) turns a folder into canonical bytes: the same files give the same bundle on
any day, from any copy (see ``canonical``). Reading (``read_bundle``, ``extract_bundle``) treats
every bundle as hostile until each member has passed the rules in ``paths``, ``members`` and
``tarscan`` within ``BundleLimits``; nothing is returned or written before that.

    collect_files(folder)          the files that go in (.skillignore, junk, no links)
    pack(folder, name)             → PackedBundle (data, digest, tar_digest, files)
    write_bundle(packed, dir, v)   → dir/{name}-{v}.skill.tgz, atomically
    read_bundle(data)              → BundleContents, or BundleRejected (a BundleError)
    extract_bundle(data, dest)     → dest/{name}/, via a temp folder and a rename
    read_artifact(data, type, n)   → BundleContents of a bundle, a well-known archive (.tar.gz
                                     or .zip, files at the root) or a lone SKILL.md
    archive_tar_gz(contents)       → the reproducible well-known .tar.gz (files at the root)
    read_zip_bundle(data)          → BundleContents of a zip with one top folder (the skills
                                     APIs' upload), under the same rules
    read_file_parts(parts, exe)    → BundleContents of (path, bytes) pairs (a multipart upload)
    zip_bundle(contents)           → the canonical zip with one top folder (an API download)
"""

from skillctl.bundle.archive import ARCHIVE, ARTIFACT_TYPES, BUNDLE, SKILL_MD, archive_tar_gz, read_artifact
from skillctl.bundle.canonical import DEFAULT_MTIME
from skillctl.bundle.collect import IGNORE_FILE, BundleFile, collect_files
from skillctl.bundle.digest import sha256_digest
from skillctl.bundle.extract import extract_bundle, write_contents
from skillctl.bundle.limits import BundleLimits
from skillctl.bundle.pack import BUNDLE_SUFFIX, PackedBundle, bundle_filename, pack, repack, write_bundle
from skillctl.bundle.read import BundleContents, BundleRejected, read_bundle, read_bundle_file
from skillctl.bundle.upload import read_file_parts, read_zip_bundle, zip_bundle

__all__ = [
    "ARCHIVE",
    "ARTIFACT_TYPES",
    "BUNDLE",
    "SKILL_MD",
    "archive_tar_gz",
    "read_artifact",
    "BUNDLE_SUFFIX",
    "DEFAULT_MTIME",
    "IGNORE_FILE",
    "BundleContents",
    "BundleFile",
    "BundleLimits",
    "BundleRejected",
    "PackedBundle",
    "bundle_filename",
    "collect_files",
    "extract_bundle",
    "pack",
    "read_bundle",
    "read_bundle_file",
    "read_file_parts",
    "read_zip_bundle",
    "repack",
    "sha256_digest",
    "write_bundle",
    "write_contents",
    "zip_bundle",
]
