"""Caps that every bundle, packed or read, must stay under.

The same limits guard both directions: ``pack`` refuses to build what ``read_bundle`` would
refuse to open, so an author learns about a limit at pack time, not from a consumer.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from skillctl.errors import ConfigError

MiB = 1024 * 1024


@dataclass(frozen=True)
class BundleLimits:
    """Upper bounds for one bundle. All sizes are in bytes; every field must be a positive int.

    Defaults, and why:

    - ``max_files=500`` regular files: the hosted skills APIs (OpenAI ``/v1/skills``) refuse more
      than 500 files, so a bundle we accept can also be uploaded there; real skills have tens.
    - ``max_dirs=500`` directories, counted apart from files so a tree of empty folders cannot
      slip past the file cap.
    - ``max_file_size=5 MiB`` per file and ``max_total_size=100 MiB`` unpacked: Helm's chart
      limits, the closest lifecycle to ours (the hosted APIs allow 25 MB per file; we are stricter
      because skill files end up in a model's context or a container's disk).
    - ``max_bundle_size=50 MiB`` compressed: the hosted APIs' zip limit.
    - ``max_path_length=255`` bytes (UTF-8) for a member path including the top folder, and
      ``max_depth=16`` components below it: extractable on any common file system (NAME_MAX 255)
      and far beyond what the spec's "one level deep" references need.
    - ``max_header_size=64 KiB`` for one PAX or GNU long-name header: they carry a path and a few
      attributes; anything bigger is an attempt to make the reader buffer it.
    """

    max_files: int = 500
    max_dirs: int = 500
    max_file_size: int = 5 * MiB
    max_total_size: int = 100 * MiB
    max_bundle_size: int = 50 * MiB
    max_path_length: int = 255
    max_depth: int = 16
    max_header_size: int = 64 * 1024

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            # bool is an int subclass; True as a limit is a bug, not a 1.
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ConfigError(
                    f"bundle limit {f.name} must be a positive integer, got {value!r}; "
                    "fix the configuration or leave it unset for the default"
                )
