"""Build the agent image offline, once per recipe.

Contract of ``ensure_image``: it returns a local image reference (``skillctl-agent:<hash12>``)
whose label ``org.skillctl.recipe`` equals the hash of the current recipe, building it only when
no such image exists (or ``force``). The recipe is the build context in ``container/`` plus the
base: either a root filesystem made here with ``debootstrap --variant=minbase`` and
``docker import`` (no registry needed), or a public image named with ``base=``. Nothing is ever
pulled by us; the Dockerfile has no ``# syntax=`` line so the legacy builder needs no frontend.

Run ``python -m skillctl.sandbox.image`` (or ``skillctl image build``) to pre-build it in CI.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

from skillctl.errors import SandboxError
from skillctl.sandbox.client import docker_client, list_images

Progress = Callable[[str], None]

IMAGE_REPO = "skillctl-agent"
BASE_REPO = "skillctl-base"
LATEST = f"{IMAGE_REPO}:latest"
RECIPE_LABEL = "org.skillctl.recipe"
BASE_LABEL = "org.skillctl.base"

# Bump when the way the base root filesystem is made changes (packages, trimming), so old
# bases are not reused for a new recipe.
BASE_RECIPE_VERSION = "1"
DEFAULT_SUITE = "bookworm"
# coreutils (timeout, cat, ls…) is part of minbase; procps gives `ps` for debugging and tests.
BASE_PACKAGES = ("python3", "sqlite3", "procps")
# Not needed at run time and a third of the size: apt caches, docs, manuals, translations.
TRIM_PATHS = (
    "var/cache/apt/archives",
    "var/lib/apt/lists",
    "usr/share/doc",
    "usr/share/man",
    "usr/share/info",
    "usr/share/locale",
)


@dataclass(frozen=True)
class Recipe:
    """What determines the image: the build context's bytes and the base it starts from."""

    context_dir: Path
    base: str  # "debootstrap:<suite>:<packages>" or a public image reference
    hash: str  # sha256 hex over the above

    @property
    def tag(self) -> str:
        return f"{IMAGE_REPO}:{self.hash[:12]}"

    @property
    def uses_local_base(self) -> bool:
        return self.base.startswith("debootstrap:")


def container_dir() -> Path:
    """The image build context: ``$SKILLCTL_CONTAINER_DIR``, else the copy an installed wheel
    carries (``skillctl/_container/``), else ``container/`` of the source checkout (an editable
    install). The wheel's copy is byte-identical to the checkout's, so both give one recipe hash."""
    override = os.environ.get("SKILLCTL_CONTAINER_DIR")
    package = Path(__file__).resolve().parents[1]
    candidates = [Path(override)] if override else [package / "_container", package.parent / "container"]
    for path in candidates:
        if (path / "Dockerfile").is_file():
            return path
    raise SandboxError(
        f"no Dockerfile in {' or '.join(str(p) for p in candidates)}: reinstall skillctl, or set "
        "SKILLCTL_CONTAINER_DIR to the folder holding the agent image's build context"
    )


def debian_suite() -> str:
    return os.environ.get("SKILLCTL_DEBIAN_SUITE", DEFAULT_SUITE)


def _local_base_descriptor(suite: str) -> str:
    return f"debootstrap:{suite}:{','.join(BASE_PACKAGES)}:v{BASE_RECIPE_VERSION}:{platform.machine()}"


def recipe(base: str | None = None, context: Path | None = None) -> Recipe:
    """Hash the build context (every file, by relative path and content) and the base."""
    context = context or container_dir()
    digest = hashlib.sha256()
    base_desc = base or _local_base_descriptor(debian_suite())
    digest.update(f"base={base_desc}\n".encode())
    for path in sorted(p for p in context.rglob("*") if p.is_file()):
        rel = path.relative_to(context).as_posix()
        if rel.endswith(".md"):  # notes for people do not change the image
            continue
        digest.update(f"file={rel}\n".encode())
        digest.update(hashlib.sha256(path.read_bytes()).hexdigest().encode() + b"\n")
    return Recipe(context_dir=context, base=base_desc, hash=digest.hexdigest())


# ------------------------------------------------------------------------------------ mirror


def _parse_sources(text: str, deb822: bool) -> Iterator[tuple[str, list[str], list[str]]]:
    """Yield (uri, suites, components) for every binary ("deb") source in an apt sources file."""
    if deb822:
        for stanza in text.split("\n\n"):
            fields: dict[str, str] = {}
            key = None
            for line in stanza.splitlines():
                if not line.strip() or line.lstrip().startswith("#"):
                    continue
                if line[0] in " \t" and key:
                    fields[key] += " " + line.strip()
                    continue
                key, _, value = line.partition(":")
                key = key.strip().lower()
                fields[key] = value.strip()
            if "deb" not in fields.get("types", "").split():
                continue
            if fields.get("enabled", "yes").lower() == "no":
                continue
            for uri in fields.get("uris", "").split():
                yield uri, fields.get("suites", "").split(), fields.get("components", "").split()
        return
    for line in text.splitlines():
        words = line.split("#", 1)[0].split()
        if not words or words[0] != "deb":
            continue
        words = words[1:]
        if words and words[0].startswith("["):  # options like [arch=amd64 signed-by=…]
            while words and not words[0].endswith("]"):
                words = words[1:]
            words = words[1:]
        if len(words) >= 2:
            yield words[0], [words[1]], words[2:]


def find_mirror(suite: str, apt_dir: Path = Path("/etc/apt")) -> str:
    """The Debian mirror apt is configured with for ``suite`` (``$SKILLCTL_DEBIAN_MIRROR`` wins).

    debootstrap must use the same mirror apt uses here — never a hard-coded internet host —
    because that is the one the machine is allowed to reach.
    """
    override = os.environ.get("SKILLCTL_DEBIAN_MIRROR")
    if override:
        return override
    files: list[tuple[Path, bool]] = []
    if (apt_dir / "sources.list").is_file():
        files.append((apt_dir / "sources.list", False))
    listed = apt_dir / "sources.list.d"
    if listed.is_dir():
        for path in sorted(listed.iterdir()):
            if path.suffix == ".sources":
                files.append((path, True))
            elif path.suffix == ".list":
                files.append((path, False))
    for path, deb822 in files:
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for uri, suites, components in _parse_sources(text, deb822):
            if suite in suites and "main" in components:
                return uri
    raise SandboxError(
        f"no apt source for Debian '{suite}' (main) in {apt_dir}/sources.list*: set "
        "SKILLCTL_DEBIAN_MIRROR to a reachable Debian mirror, or build on a public base with "
        "`skillctl image build --base python:3.12-slim`"
    )


# ------------------------------------------------------------------------------------ build


@contextlib.contextmanager
def _build_lock() -> Iterator[None]:
    # Two processes (a test run and a CLI call, say) must not debootstrap the same base twice.
    path = Path(tempfile.gettempdir()) / "skillctl-image-build.lock"
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def agent_images(client: Any, recipe_hash: str | None = None) -> list[Any]:
    """Local agent images (of ``recipe_hash`` when given).

    Images built on an agent image inherit its labels, so skill environment images (labelled
    ``org.skillctl.env…``) carry the recipe label too; they are not agent images.
    """
    wanted = f"{RECIPE_LABEL}={recipe_hash}" if recipe_hash else RECIPE_LABEL
    return [
        image
        for image in list_images(client, {"label": wanted})
        if not any(key.startswith("org.skillctl.env") for key in image.attrs.get("Config", {}).get("Labels") or {})
    ]


def find_image(client: Any, recipe_hash: str) -> Any | None:
    """The local agent image of ``recipe_hash`` (the one tagged for it if several), or None."""
    images = agent_images(client, recipe_hash)
    if not images:
        return None
    tag = f"{IMAGE_REPO}:{recipe_hash[:12]}"
    return max(images, key=lambda image: (tag in image.tags, image.attrs.get("Created", "")))


def _run_logged(cmd: list[str], progress: Progress, what: str) -> None:
    """Run ``cmd``, passing its output to ``progress`` line by line; fail with its last lines."""
    tail: list[str] = []
    try:
        proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True,
            errors="replace",
        )
    except FileNotFoundError as exc:
        raise SandboxError(f"{what}: {cmd[0]} is not installed") from exc
    assert proc.stdout is not None
    for line in proc.stdout:
        line = line.rstrip()
        tail = (tail + [line])[-5:]
        progress(f"  {line}")
    if proc.wait() != 0:
        detail = " | ".join(tail) or f"exit status {proc.returncode}"
        raise SandboxError(f"{what} failed: {detail}")


def build_local_base(client: Any, suite: str, progress: Progress, *, mirror: str | None = None) -> str:
    """Make the base root filesystem with debootstrap and ``docker import`` it; return its tag.

    Skipped when the tag already exists (the tag is derived from the base recipe).
    """
    tag = f"{BASE_REPO}:{hashlib.sha256(_local_base_descriptor(suite).encode()).hexdigest()[:12]}"
    with contextlib.suppress(Exception):
        client.images.get(tag)
        progress(f"base {tag} exists, reusing it")
        return tag
    if shutil.which("debootstrap") is None:
        raise SandboxError(
            "debootstrap is not installed, and it makes the offline base image: "
            "`apt-get install -y debootstrap`, or on a machine with registry access "
            "`skillctl image build --base python:3.12-slim`"
        )
    if os.geteuid() != 0:
        raise SandboxError("building the base root filesystem needs root (debootstrap chroots): run as root")
    mirror = mirror or find_mirror(suite)
    workdir = Path(tempfile.mkdtemp(prefix="skillctl-rootfs-", dir="/var/tmp"))
    rootfs = workdir / "rootfs"
    try:
        progress(f"debootstrap {suite} (minbase + {', '.join(BASE_PACKAGES)}) from {mirror}")
        _run_logged(
            [
                "debootstrap", "--variant=minbase", f"--include={','.join(BASE_PACKAGES)}",
                suite, str(rootfs), mirror,
            ],
            progress,
            "debootstrap",
        )
        for rel in TRIM_PATHS:
            target = rootfs / rel
            if target.is_dir():
                shutil.rmtree(target)
                target.mkdir(parents=True)
        tarball = workdir / "rootfs.tar"
        progress("packing the root filesystem")
        _run_logged(["tar", "--numeric-owner", "-C", str(rootfs), "-cf", str(tarball), "."], progress, "tar")
        progress(f"importing {tag}")
        repo, _, version = tag.partition(":")
        client.api.import_image_from_file(str(tarball), repository=repo, tag=version)
        client.images.get(tag)  # fail here, clearly, if the import did not produce the tag
        return tag
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


@contextlib.contextmanager
def _build_context(rec: Recipe, progress: Progress) -> Iterator[Path]:
    """The recipe's context folder plus the command supervisor, compiled here from its source in
    that folder (the base image has no compiler, and needs none)."""
    from skillctl.sandbox.supervisor import BINARY_NAME, SOURCE_NAME, build

    progress(f"compiling the command supervisor ({SOURCE_NAME})")
    binary = build(rec.context_dir / SOURCE_NAME)
    with tempfile.TemporaryDirectory(prefix="skillctl-image-context-") as tmp:
        context = Path(tmp) / "context"
        shutil.copytree(rec.context_dir, context)
        shutil.copy2(binary, context / BINARY_NAME)
        yield context


def _docker_build(client: Any, rec: Recipe, base_ref: str, progress: Progress) -> None:
    with _build_context(rec, progress) as context:
        _docker_build_in(client, rec, context, base_ref, progress)


def _docker_build_in(client: Any, rec: Recipe, context: Path, base_ref: str, progress: Progress) -> None:
    stream = client.api.build(
        path=str(context),
        tag=rec.tag,
        buildargs={"BASE": base_ref},
        labels={RECIPE_LABEL: rec.hash, BASE_LABEL: rec.base},
        rm=True,
        forcerm=True,
        pull=False,
        decode=True,
    )
    for event in stream:
        if "error" in event:
            detail = str(event.get("error", "")).strip().splitlines()[-1:] or ["unknown error"]
            raise SandboxError(f"docker build of {rec.tag} failed: {detail[0]}")
        text = str(event.get("stream", "")).rstrip()
        if text:
            for line in text.splitlines():
                progress(f"  {line}")


def ensure_image(
    *,
    base: str | None = None,
    force: bool = False,
    progress: Progress | None = None,
    client: Any | None = None,
    mirror: str | None = None,
) -> str:
    """Return the agent image reference for the current recipe, building it only if missing.

    ``base`` names a public base image (needs registry access); by default the base is made
    locally with debootstrap. ``progress`` receives one human-readable line at a time.
    Also tags the result ``skillctl-agent:latest``. Raises ``SandboxError`` with what to do.
    """
    say: Progress = progress or (lambda _line: None)
    client = client or docker_client()
    rec = recipe(base)
    with _build_lock():
        existing = None if force else find_image(client, rec.hash)
        if existing is not None:
            if rec.tag not in existing.tags:
                # Its tag was removed (an interrupted clean-up, a `docker rmi` of a tag in use):
                # the image is still the recipe's, so name it again rather than fail.
                existing.tag(IMAGE_REPO, rec.tag.partition(":")[2])
            say(f"{rec.tag} is up to date (recipe {rec.hash[:12]})")
        else:
            if rec.uses_local_base:
                base_ref = build_local_base(client, debian_suite(), say, mirror=mirror)
            else:
                base_ref = rec.base
                try:
                    client.images.get(base_ref)
                except Exception as exc:
                    raise SandboxError(
                        f"base image {base_ref} is not present locally: `docker pull {base_ref}` on a "
                        "machine with registry access, or omit --base to build the base offline"
                    ) from exc
            say(f"building {rec.tag} on {base_ref}")
            _docker_build(client, rec, base_ref, say)
        repo, _, _ = LATEST.partition(":")
        client.api.tag(rec.tag, repo, "latest")
    return rec.tag


def image_status(client: Any | None = None, base: str | None = None) -> dict[str, Any]:
    """What ``skillctl image status`` reports: the expected recipe and the images present."""
    client = client or docker_client()
    rec = recipe(base)
    current = find_image(client, rec.hash)
    images = []
    for image in agent_images(client):
        labels = image.attrs.get("Config", {}).get("Labels") or {}
        images.append(
            {
                "id": image.id,
                "tags": sorted(image.tags),
                "recipe": labels.get(RECIPE_LABEL, ""),
                "base": labels.get(BASE_LABEL, ""),
                "created": image.attrs.get("Created", ""),
                "size": image.attrs.get("Size", 0),
                "current": labels.get(RECIPE_LABEL) == rec.hash,
            }
        )
    images.sort(key=lambda item: (not item["current"], item["created"]))
    return {
        "image": rec.tag,
        "recipe": rec.hash,
        "base": rec.base,
        "built": current is not None,
        "images": images,
    }


def main(argv: list[str] | None = None) -> int:
    """``python -m skillctl.sandbox.image [--base IMAGE] [--force]``: pre-build for CI."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m skillctl.sandbox.image", description=main.__doc__)
    parser.add_argument("--base", default=None, help="public base image (needs registry access)")
    parser.add_argument("--force", action="store_true", help="rebuild even if up to date")
    args = parser.parse_args(argv)
    try:
        ref = ensure_image(base=args.base, force=args.force, progress=lambda line: print(line, file=sys.stderr))
    except SandboxError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(ref)
    return 0


if __name__ == "__main__":
    sys.exit(main())
