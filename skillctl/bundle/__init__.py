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

# Names -> the submodule that defines them, imported on first use (PEP 562): a command that only
# reads a lock or plans a sync (``skillctl sync`` with nothing to do) does not pay for the packer,
# the archive readers and the skill validator they pull in.
from skillctl.lazy import lazy_exports

_WHERE = {
    "archive": ("ARCHIVE", "ARTIFACT_TYPES", "BUNDLE", "SKILL_MD", "archive_tar_gz", "read_artifact"),
    "canonical": ("DEFAULT_MTIME",),
    "collect": ("IGNORE_FILE", "BundleFile", "collect_files"),
    "digest": ("sha256_digest",),
    "extract": ("extract_bundle", "write_contents"),
    "limits": ("BundleLimits",),
    "pack": ("BUNDLE_SUFFIX", "PackedBundle", "bundle_filename", "pack", "repack", "write_bundle"),
    "read": ("BundleContents", "BundleRejected", "read_bundle", "read_bundle_file"),
    "upload": ("read_file_parts", "read_zip_bundle", "zip_bundle"),
}
__getattr__, __all__ = lazy_exports(__name__, globals(), _WHERE)

# The submodule ``pack`` shares its name with its function: importing the submodule first (anyone's
# ``from skillctl.bundle.pack import …``) would set this package's attribute ``pack`` to the
# module, which then shadows the function. Bound now, the function wins.
from skillctl.bundle.pack import pack  # noqa: E402
