"""What a skills API upload holds, checked like everything ``skillctl publish`` takes.

Both APIs send multipart form data: one part per file, each named by its path in the skill's
folder (``my-skill/SKILL.md``, under the field ``files[]``), or a single zip of that folder
(``files``). A lone ``.tar.gz`` is taken too (a ``skillctl pack`` bundle). Each form goes through
the bundle readers' hostile-input rules (``skillctl.bundle``) before anything is believed.

A part carries no file mode. A file uploaded as a part is executable when it starts with
``#!``: what runs as a script says so, and nothing else gets the execute bit. A zip's own Unix
modes are kept.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from skillctl.bundle import BundleContents, BundleLimits, BundleRejected, read_bundle, read_file_parts, read_zip_bundle
from skillctl.bundle.inflate import GZIP_MAGIC
from skillctl.bundle.zipscan import ZIP_MAGIC
from skillctl.serve.errors import bad_request
from skillctl.skill.document import parse_skill_md

SKILL_FILE = "SKILL.md"


@dataclass(frozen=True)
class Upload:
    """The files of a multipart upload, as (file name the client gave, bytes), in order."""

    files: list[tuple[str, bytes]] = field(default_factory=list)


def _is_archive(upload: Upload) -> bool:
    if len(upload.files) != 1:
        return False
    name, data = upload.files[0]
    return "/" not in name and (data[:4] == ZIP_MAGIC or data[:2] == GZIP_MAGIC)


def _shebang(rel: str, data: bytes) -> bool:
    return data.startswith(b"#!")


def read_upload(upload: Upload, limits: BundleLimits) -> BundleContents:
    """The skill an upload holds, every member checked; a 400 naming the rule it broke."""
    if not upload.files:
        raise bad_request("no files: send the skill's files as 'files[]' parts named by their paths "
                          "(my-skill/SKILL.md, …), or one zip of the skill's folder as 'files'", param="files")
    try:
        if _is_archive(upload):
            name, data = upload.files[0]
            source = f"upload {name}"
            if data[:4] == ZIP_MAGIC:
                return read_zip_bundle(data, limits=limits, source=source)
            return read_bundle(data, limits=limits, source=source)
        return read_file_parts(upload.files, _shebang, limits=limits)
    except BundleRejected as exc:
        raise bad_request(f"upload refused: {exc.refused}", param="files") from None


def declares_version(contents: BundleContents) -> bool:
    """Whether SKILL.md sets ``metadata.version`` (validation then judges the value)."""
    raw = contents.files.get(SKILL_FILE)
    doc, _ = parse_skill_md(raw, SKILL_FILE) if raw is not None else (None, [])
    meta = doc.metadata.get("metadata") if doc is not None else None
    return isinstance(meta, dict) and "version" in meta
